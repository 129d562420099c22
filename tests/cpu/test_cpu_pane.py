"""The CPU pane in the real app: live data from a short run, fairness, cores, explain key."""

from __future__ import annotations

import asyncio

from probetop.probes.cpu import CpuSettings
from probetop.probes.cpu.probe import CpuProbe
from probetop.probes.system.collectors import CpuLoadProbe
from probetop.tui.run.viewconfig import Display, LiveView, ReplayView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.cpu import CpuBenchPane, text_bar
from probetop.tui.ui.widgets.registry import pane_class


def test_registry_maps_cpu_to_the_bench_pane() -> None:
    assert pane_class("cpu") is CpuBenchPane


def test_text_bar_scales_in_eighths() -> None:
    assert text_bar(0, 10, 4) == "    "
    assert text_bar(10, 10, 4) == "████"
    assert text_bar(5, 10, 4) == "██  "
    assert text_bar(20, 10, 4) == "████"  # clamped


async def test_pane_shows_rates_fairness_cores_and_sweep() -> None:
    probes = [
        CpuLoadProbe(0.25),
        CpuProbe(
            CpuSettings(
                time_s=0.5, max_prime=3000, interval_s=0.25, sweep=True, sweep_counts=[1, 2]
            )
        ),
    ]
    app = make_app(LiveView(probes=probes, display=Display(interval_s=0.25, focus="cpu")))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = None
        for _ in range(1200):  # two 0.5 s sweep steps; up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(CpuBenchPane))
            if panes and len(panes[0].sweep) == 2:
                pane = panes[0]
                break
        if pane is None:  # say what state it was in (failed once in CI, never locally)
            found = list(app.query(CpuBenchPane))
            sweep = found[0].sweep if found else None
            try:
                summary = probes[1].summary()
            except Exception as exc:  # diagnostics only
                summary = repr(exc)
            raise AssertionError(
                f"the sweep never finished in the pane: panes={len(found)} sweep={sweep!r} "
                f"summary={summary!r}"
            )
        await pilot.pause()
        pane.render_frame()
        columns = pane.columns.text
        assert "events per thread" in columns
        assert "t0" in columns and "t1" in columns
        assert "cpu0" in columns  # observed from system.cpu
        sweep = pane.sweep_block.text
        assert "1 thr" in sweep and "2 thr" in sweep and "100%" in sweep
        assert "events/s" in pane.eps_row.label.text
        assert pane.chart_series()["sweep events/s by threads"][0][0] == 1.0
        pane.focus()
        await pilot.press("e")
        assert "one event" in pane.explain_block.text
        await pilot.press("e")
        assert pane.explain_block.text == ""


async def test_pane_replays_a_recorded_cpu_session(tmp_path) -> None:
    from probetop.probes.record.reader import load_session
    from probetop.tui.run.runner import run_headless

    path = tmp_path / "cpu.jsonl"
    probes = [
        CpuLoadProbe(0.25),
        CpuProbe(CpuSettings(threads=2, time_s=1.0, max_prime=3000, interval_s=0.25)),
    ]
    await run_headless(probes, record=path, command=["probetop", "cpu"])
    app = make_app(ReplayView(load_session(path)))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = None
        for _ in range(1200):  # the replay plays in real time: ~1.2 s (up to 60 s loaded)
            await asyncio.sleep(0.05)
            panes = list(app.query(CpuBenchPane))
            if panes and panes[0].final is not None:
                pane = panes[0]
                break
        assert pane is not None, "the replay never delivered the final sample"
        await pilot.pause()
        pane.render_frame()
        assert "finished:" in pane.headline.text
        assert "(2 threads)" in pane.headline.text
        assert "t1" in pane.columns.text and "cpu0" in pane.columns.text
        assert pane.series("eps")


async def test_explain_key_shows_on_a_small_terminal() -> None:
    """At 80x24 with the passive panes the CPU pane is squeezed (rows cut
    from its bottom): the explanation `e` adds was drawn last, below the cut,
    so the key seemed to do nothing. It comes first in the pane."""
    from probetop.probes.system.collectors import DiskProbe, NetProbe

    probes = [
        CpuLoadProbe(0.25),
        DiskProbe(0.25),
        NetProbe(0.25),
        CpuProbe(CpuSettings(time_s=30.0, max_prime=3000, interval_s=0.25)),
    ]
    app = make_app(LiveView(probes=probes, display=Display(interval_s=0.25, focus="cpu")))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(1200):
            await asyncio.sleep(0.05)
            panes = list(app.query(CpuBenchPane))
            if panes and panes[0].samples_seen >= 2:
                break
        pane = app.query_one(CpuBenchPane)
        pane.focus()
        await pilot.press("e")
        await pilot.pause(0.3)
        shown = pane.explain_block.region.intersection(pane.content_region)
        assert shown.height >= 1, (pane.explain_block.region, pane.content_region)
        text = "\n".join(
            "".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()
        )
        assert "one event =" in text


def test_headline_names_the_percentile() -> None:
    """The compact list read 'latency percentile 0.42 ms': which one? The
    run's --percentile (95 by default), here and in the maximised table."""
    import json
    from pathlib import Path

    demo = Path(__file__).parents[1] / "data" / "demo_session.jsonl"
    with demo.open() as f:
        info = next(p for p in json.loads(f.readline())["probes"] if p["kind"] == "cpu")
    pane = CpuBenchPane(info)
    pane.history.add_values(1.0, {"eps": 2684.0, "lat_pct_ms": 0.42})
    assert "latency p95 0.42 ms" in pane.headline_text(), pane.headline_text()
    assert pane.stats_lines(["lat_pct_ms"])[1].startswith("latency p95 ")


async def test_a_sub_microsecond_latency_reads_in_its_unit() -> None:
    """An event of a few primes takes well under a microsecond: the headline
    read "avg lat 0.00 ms" (sysbench's report keeps its ms, the pane not)."""
    import re

    probe = CpuProbe(CpuSettings(time_s=0.75, max_prime=10, interval_s=0.25))
    app = make_app(LiveView(probes=[probe], display=Display(interval_s=0.25, focus="cpu")))
    async with app.run_test(size=(120, 40)) as pilot:
        live = ""
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(CpuBenchPane))
            if panes and re.search(r"avg lat \d", panes[0].headline.text):
                live = panes[0].headline.text
                break
        await pilot.pause()
        lat = re.search(r"avg lat (\S+) (\S+)", live)
        assert lat and float(lat[1]) > 0 and lat[2] in ("ns", "µs"), live
