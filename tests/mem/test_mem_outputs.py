"""The memory family's outputs beyond the report: Prometheus metrics (read by
prometheus_client's parser), the pane in the real app, the recording."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

from probetop.probes.mem import MemProbe, MemSettings
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.mem import MemBenchPane, size_text
from probetop.tui.ui.widgets.registry import pane_class

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def test_registry_maps_mem_to_its_pane() -> None:
    assert pane_class("mem") is MemBenchPane
    assert [size_text(n) for n in (8, 1024, 1 << 20, 3 << 10)] == ["8", "1K", "1M", "3K"]


def test_textfile_metrics_count_what_the_report_counts(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    argv = ["mem", "--threads", "2", "--memory-total-size", "64M", "--memory-scope", "local"]
    argv += ["--time", "30", "--interval", "0.25", "--json", "--textfile", str(tmp_path)]
    out = subprocess.run(
        [*PROBETOP, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    families = {
        f.name: f for f in text_string_to_metric_families((tmp_path / "probetop.prom").read_text())
    }
    ops = families["probetop_mem_operations"]
    assert ops.type == "counter"
    assert ops.samples[0].value == report["total_events"] == 64 * 1024
    moved = families["probetop_mem_transferred_bytes"].samples[0].value
    assert moved == 64 << 20
    info = families["probetop_mem_info"].samples[0].labels
    assert info["block_size"] == "1024" and info["scope"] == "local" and info["threads"] == "2"


async def test_pane_shows_rates_and_threads() -> None:
    probe = MemProbe(MemSettings(threads=2, time_s=1.0, interval_s=0.25, oper="read"))
    app = make_app(LiveView(probes=[probe], display=Display(interval_s=0.25, focus="mem")))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = None
        live = ""  # a headline drawn while the run measured, with its latency
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(MemBenchPane))
            if panes and re.search(r"avg lat \d", panes[0].headline.text) and not live:
                live = panes[0].headline.text
            if panes and panes[0].final is not None:
                pane = panes[0]
                break
        assert pane is not None, "the run never finished in the pane"
        await pilot.pause()
        pane.render_frame()
        assert "t0" in pane.threads_block.text and "t1" in pane.threads_block.text
        assert "ops/s" in pane.ops_row.label.text and "MiB/s" in pane.mibs_row.label.text
        title = pane.full_title or str(pane.border_title)  # what runs is in the title
        assert "seq read" in title and "finished" in pane.headline.text
        # A 1K read takes well under a microsecond: it read "avg lat 0.00 ms".
        lat = re.search(r"avg lat (\S+) (\S+)", live)
        assert lat and float(lat[1]) > 0 and lat[2] in ("ns", "µs"), live
        assert pane.chart_series()["ops/s"]
        # The maximised chart's axes: MiB/s values were labelled "B/s" (2^20
        # times too small: "350 B/s" for 350 MiB/s).
        units = [unit for unit, _series in pane.chart_panels()]
        assert "MiB/s" in units and "B/s" not in units, units
        pane.focus()
        await pilot.press("e")
        assert "one operation" in pane.explain_block.text
