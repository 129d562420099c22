"""The http pane in the real app, fed by a live probe against local servers."""

from __future__ import annotations

import asyncio
import os

import pytest
from http_fixtures import LocalServer
from probetop.probes.http import HttpInterval, HttpProbe, HttpSettings
from probetop.tui.run.runner import run_headless
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.http import HttpPane, fit_label, stacked_bar
from probetop.tui.ui.widgets.registry import pane_class


def test_registry_maps_http_to_its_pane() -> None:
    assert pane_class("http") is HttpPane


def test_stacked_bar_lays_phases_end_to_end() -> None:
    bar = stacked_bar({"dns": 0.01, "tcp": 1.0, "tls": 0.0, "server": 6.0, "transfer": 1.0}, 8, 8)
    assert bar == "·▒██████"[:8]
    assert stacked_bar({}, 0, 4) == "    "


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


async def test_pane_shows_a_row_per_url_with_percentiles_and_errors(server) -> None:
    urls = [f"{server.url}/delay?ms=15", f"{server.url}/status?code=500", "http://127.0.0.1:1/"]
    probe = HttpProbe(HttpSettings(urls=tuple(urls), interval_s=0.1, count=6))
    app = make_app(LiveView(probes=[probe], display=Display(interval_s=0.1, focus="http")))
    async with app.run_test(size=(160, 40)) as pilot:
        pane = None
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(HttpPane))
            if panes and all(len(r.ttfb) >= 6 for r in panes[0].rows.values()):
                pane = panes[0]
                break
        assert pane is not None, [
            (p.samples_seen, {k: len(r.ttfb) for k, r in p.rows.items()}, p.last_status)
            for p in app.query(HttpPane)
        ]
        await pilot.pause()
        pane.render_frame()
        text = pane.table.text
        lines = text.splitlines()
        assert len(lines) == 1 + len(urls)
        ok_row = next(line for line in lines if "/delay?ms=15" in line)
        assert "█" in ok_row  # the server phase dominates the stacked bar
        assert " 200 " in ok_row
        assert "http_5xx 6" in text and "refused 6" in text
        # errors are not latencies: the failing URLs carry the loud marker
        err_row = next(line for line in lines if "/status?" in line)
        assert "!!100.0% http_5xx 6" in err_row and "!!" not in ok_row
        status = pane.status.text
        assert "!! errors 66.7 %" in status and "2xx/3xx 6  4xx 0  5xx 6  transport 6" in status
        assert "skipped turns " in status and "discarded (warm-up) 0" in status
        row = pane.rows[probe.labels[urls[0]]]
        p50, p90, p99 = row.percentiles
        assert p50 is not None and 15.0 <= p50 <= p90 <= p99  # type: ignore[operator]
        # Three URLs, one with latencies (errors are not): the headline is its.
        assert "TTFB, slowest" in pane.ttfb_row.label.text
        note = f"headline: slowest URL {fit_label(probe.labels[urls[0]], 36)}"
        assert pane.legend.text.startswith(note + "\n")
        assert any(key.startswith("TTFB ") for key in pane.chart_series())


async def test_a_recording_replays_into_the_same_rows(server, tmp_path) -> None:
    from probetop.probes.core.sample import Announce, Sample
    from probetop.probes.record.reader import load_session

    rec = tmp_path / "http.jsonl"
    urls = [f"{server.url}/delay?ms=5", "http://127.0.0.1:1/"]
    probe = HttpProbe(HttpSettings(urls=tuple(urls), interval_s=0.05, count=4))
    await run_headless([probe], record=rec)
    session = load_session(rec)
    pane: HttpPane | None = None
    for _t, record in session.records():
        if isinstance(record, Announce) and record.info.get("kind") == "http":
            pane = HttpPane(record.info)
        elif isinstance(record, Sample) and pane is not None and record.probe == pane.probe_id:
            pane.add_sample(record)
    assert pane is not None
    lines = pane.table_lines()
    assert len(lines) == 3 and "refused 4" in lines[2]
    assert len(pane.rows[probe.labels[urls[0]]].ttfb) == 4


async def test_headline_is_the_slowest_urls_median_never_pooled(server, tmp_path) -> None:
    """A 20 ms URL and a fast one: a median pooled over both reads about
    10.5 ms, a time no URL took; the headline is the 20 ms URL's, named.
    Checked after every interval, not at the end: an interval in which the
    slow URL finished nothing (under load, often the last) names the fast
    one with its own figure, as ``HttpInterval.slowest`` says."""
    from probetop.probes.core.sample import Announce, Sample
    from probetop.probes.record.reader import load_session

    rec = tmp_path / "http.jsonl"
    urls = [f"{server.url}/delay?ms=20", f"{server.url}/"]
    probe = HttpProbe(HttpSettings(urls=tuple(urls), interval_s=0.1, count=5))
    await run_headless([probe], record=rec)
    pane: HttpPane | None = None
    slow, fast = probe.labels[urls[0]], probe.labels[urls[1]]
    with_slow = 0  # intervals in which the 20 ms URL finished a request
    for _t, record in load_session(rec).records():
        if isinstance(record, Announce) and record.info.get("kind") == "http":
            pane = HttpPane(record.info)
        elif isinstance(record, Sample) and pane is not None and record.probe == pane.probe_id:
            pane.add_sample(record)
            finished = {u.label: u for u in HttpInterval.from_sample(record).urls}
            if not finished:
                continue
            # The interval's figure is one URL's own, never a mix of the two.
            named = slow if slow in finished else fast
            for metric in ("ttfb_ms", "total_ms"):
                assert pane.slowest[metric] == named, (metric, list(finished))
                value = pane.latest(metric)
                assert value == finished[named].median_ms(metric), metric
                assert named == fast or (value or 0.0) >= 20.0, (metric, value)
                assert pane.headline_title(metric).endswith(", slowest")
            assert pane.headline_note() == f"headline: slowest URL {fit_label(named, 36)}"
            assert pane.headline_text().endswith(f"slowest {fit_label(named, 12)}")
            with_slow += named == slow
    assert pane is not None and with_slow >= 3
    fast_p50 = pane.rows[fast]
    fast_p50.update_percentiles()
    assert fast_p50.percentiles[0] is not None and fast_p50.percentiles[0] < 10.0
    assert "TTFB median, slowest URL (ms)" in pane.chart_series()
    # One URL: its own median, no name.
    one = HttpPane({"id": "http", "params": {"labels": [slow]}})
    assert one.headline_title("ttfb_ms") == "TTFB median" and one.headline_note() == ""


async def test_add_probe_action_starts_an_http_pane(server) -> None:
    app = make_app(LiveView(probes=[], display=Display(interval_s=0.2)))
    async with app.run_test(size=(160, 40)) as pilot:
        assert app.add_probe_line(f"http --interval 0.1 {server.url}/delay?ms=1")
        pane = None
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(HttpPane))
            if panes and any(r.ttfb for r in panes[0].rows.values()):
                pane = panes[0]
                break
        assert pane is not None, "no http sample reached the pane"
        await pilot.pause()
        (probe,) = [p for p in app.hub.probes.values() if isinstance(p, HttpProbe)]
        pid = probe.worker_pid
        assert pid is not None
    # Quitting the app stops the hub, which kills and reaps the worker process.
    await asyncio.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}"), "the worker outlived the dashboard"
