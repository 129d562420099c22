"""The http load pane in the real app, fed by a live load probe against a
local server, and from a recording."""

from __future__ import annotations

import asyncio

from probetop.probes.core.sample import Announce, Sample
from probetop.probes.http import HttpLoadProbe, HttpSettings, LoadSettings
from probetop.probes.record.reader import load_session
from probetop.tui.run.runner import run_headless
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.httpload import HttpLoadPane
from probetop.tui.ui.widgets.registry import pane_class
from test_load_stall import StallServer


def test_registry_maps_http_load_to_its_pane() -> None:
    assert pane_class("http.load") is HttpLoadPane


async def test_pane_shows_rate_latency_classes_and_the_error_marker() -> None:
    with StallServer(status_every=5, status=503) as server:
        settings = HttpSettings(
            urls=(server.url,), load=LoadSettings(rate=200.0, connections=4, interval_s=0.25)
        )
        probe = HttpLoadProbe(settings)
        app = make_app(LiveView(probes=[probe], display=Display(interval_s=0.25, focus="http")))
        async with app.run_test(size=(160, 50)) as pilot:
            pane = None
            for _ in range(1200):  # up to 60 s on a loaded machine
                await asyncio.sleep(0.05)
                panes = list(app.query(HttpLoadPane))
                if panes and panes[0].samples_seen >= 3:
                    pane = panes[0]
                    break
            assert pane is not None, "no load interval reached the pane"
            assert app.focused is pane  # "http" focuses the family's load pane too
            await pilot.pause()
            pane.render_frame()
            text = pane.table.text
            assert "target 200 req/s" in text
            assert "now corrected 2xx/3xx" in text and "run service   5xx" in text
            assert "run status: 2xx/3xx" in text and "5xx" in text
            assert "generator: lag p99" in text
            assert pane.loud.display and "!! ERRORS " in pane.loud.text
            assert "req/s" in pane.headline_text()
            assert set(pane.chart_series()) == {"sent req/s", "corrected p99 ms", "service p99 ms"}
            assert "sent/s of 200" in pane.rate_row.label.text


async def test_a_recording_replays_into_the_pane(tmp_path) -> None:
    rec = tmp_path / "load.jsonl"
    with StallServer() as server:
        settings = HttpSettings(
            urls=(server.url,), load=LoadSettings(rate=100.0, time_s=1.0, interval_s=0.25)
        )
        await run_headless([HttpLoadProbe(settings)], record=rec)
    pane: HttpLoadPane | None = None
    for _t, record in load_session(rec).records():
        if isinstance(record, Announce) and record.info.get("kind") == "http.load":
            pane = HttpLoadPane(record.info)
        elif isinstance(record, Sample) and pane is not None and record.probe == pane.probe_id:
            pane.add_sample(record)
    assert pane is not None and pane.latest is not None
    assert pane.latest.final
    lines = pane.table_lines()
    assert any(line.startswith("run status: 2xx/3xx 100") for line in lines), lines
    assert pane.params.rate == 100.0 and pane.params.connections == 10
