"""The IOPS and warm-up panes in the real app, fed by real short runs."""

from __future__ import annotations

import asyncio
import os
import re

import disk_fixtures
import pytest
from disk_fixtures import loop_device
from probetop.probes.disk import IopsProbe, IopsSettings, WarmupProbe, WarmupSettings
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.system.collectors import DiskProbe
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.disk import (
    IopsPane,
    WarmupPane,
    log_bar,
    map_line,
    progress_bar,
)
from probetop.tui.ui.screens.confirm import ConfirmDestroyApp
from probetop.tui.ui.widgets.registry import pane_class

fast_dir = disk_fixtures.fast_dir


def test_registry_and_drawing_helpers() -> None:
    assert pane_class("iops") is IopsPane
    assert pane_class("warmup") is WarmupPane
    assert progress_bar(0.5, 4) == "[██··]"
    assert map_line([1.0, 0.3, 0.0]) == "█▒·"
    assert log_bar(10, 1, 100, 10) == "█" * 5


async def _wait_for(app, cls, ready, tries: int = 1200):
    for _ in range(tries):
        await asyncio.sleep(0.05)
        panes = list(app.query(cls))
        if panes and ready(panes[0]):
            return panes[0]
    panes = list(app.query(cls))
    state = (
        (panes[0].samples_seen, panes[0].last_status, getattr(panes[0], "kernel", None))
        if panes
        else None
    )
    raise AssertionError(f"{cls.__name__} never got its data: {state}")


async def test_iops_pane_shows_the_kernel_view_beside_the_probe() -> None:
    await asyncio.to_thread(warm_up_kernels)  # the JIT takes seconds on a loaded machine
    with loop_device(32 << 20) as dev:
        name = os.path.basename(dev)
        probes = [
            DiskProbe(0.25, devices=[name]),
            IopsProbe(IopsSettings(dev, jobs=2, iodepth=4, time_s=3, interval_s=0.25)),
        ]
        app = make_app(LiveView(probes=probes, display=Display(interval_s=0.25, focus="iops")))
        async with app.run_test(size=(120, 50)) as pilot:
            pane = await _wait_for(
                app, IopsPane, lambda p: p.samples_seen > 1 and p.kernel and p.kernel.read_iops
            )
            await pilot.pause()
            pane.render_frame()
            compare = pane.compare.text
            assert f"kernel {name}" in compare and "read IOPS" in compare
            # bytes/s in a named unit, as everywhere else: "read MB/s  6.99", not "read B/s 6.99M"
            byte_row = next(x for x in compare.splitlines() if x.startswith("read ") and "B/s" in x)
            assert byte_row.split()[1] in ("kB/s", "MB/s", "GB/s"), byte_row
            assert not any(v[-1] in "kMGT" for v in byte_row.split()[2:]), byte_row
            assert "read p99" in pane.latency.text and "█" in pane.latency.text
            assert pane.directions == ["read"]


async def test_iops_pane_on_a_file_without_a_block_device_says_so_whole(fast_dir) -> None:
    """tmpfs has no block device: the kernel column's heading says so in full
    (it was cut to 'kernel no block devic')."""
    if not str(fast_dir).startswith("/dev/shm/"):
        pytest.skip("needs a tmpfs (/dev/shm)")
    await asyncio.to_thread(warm_up_kernels)
    probes = [IopsProbe(IopsSettings(str(fast_dir / "f.img"), size=8 << 20, time_s=2,
                                     interval_s=0.25))]  # fmt: skip
    app = make_app(LiveView(probes=probes, display=Display(interval_s=0.25, focus="iops")))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _wait_for(app, IopsPane, lambda p: p.samples_seen > 0)
        await pilot.pause()
        pane.render_frame()
        heading = pane.compare.text.splitlines()[0]
        assert heading.rstrip().endswith("kernel: none (tmpfs?)"), heading
        assert "queue psync" in pane.compare.text


async def test_warmup_pane_shows_progress_map_and_plateau(tmp_path) -> None:
    await asyncio.to_thread(warm_up_kernels)
    target = tmp_path / "vol.img"
    with open(target, "wb") as f:
        f.truncate(64 << 20)
    settings = WarmupSettings(
        str(target), bs=4096, iodepth=1, interval_s=0.25, ss_dur=0.5,
        checkpoint=str(tmp_path / "c.json"), direct=False,
    )  # fmt: skip
    probe = WarmupProbe(settings)
    app = make_app(LiveView(probes=[probe], display=Display(interval_s=0.25, focus="warmup")))
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _wait_for(app, WarmupPane, lambda p: p.samples_seen > 0, tries=200)
        await pilot.pause()
        pane.render_frame()
        assert "%" in pane.progress.text and "ETA" in pane.progress.text
        assert pane.map_block.text.startswith("done map ")
        assert "plateau iops_slope:0.01%" in pane.plateau_block.text


async def test_warmup_pane_says_fresh_volume_at_once(tmp_path) -> None:
    """Issue 26: a read pass over mostly never-written blocks is called out
    while it runs (the banner, with the command that warms it), and the map
    shows never-written regions with their own glyph."""
    await asyncio.to_thread(warm_up_kernels)
    target = tmp_path / "fresh.img"
    with open(target, "wb") as f:
        f.write(os.urandom(4 << 20))
        f.truncate(64 << 20)
    settings = WarmupSettings(
        str(target), bs=1 << 20, iodepth=1, rate_iops=16, interval_s=0.25,
        checkpoint=str(tmp_path / "c.json"),
    )  # fmt: skip
    app = make_app(
        LiveView(probes=[WarmupProbe(settings)], display=Display(interval_s=0.25, focus="warmup"))
    )
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _wait_for(
            app, WarmupPane, lambda p: p.interval and (p.interval.read_bytes or 0) >= 20 << 20
        )
        await pilot.pause()
        pane.render_frame()
        assert "FRESH VOLUME" in pane.fresh_block.text
        assert f"probetop warmup {target} --write --read" in pane.fresh_block.text
        line = pane.map_block.text
        assert "○" in line and "█" in line, line
        pane.focus()
        await pilot.press("W")
        await pilot.pause()
        assert getattr(app, "switch_request", None) == "write+read"
    assert map_line([1.0, 1.0, 0.0], never=[0.0, 1.0, 0.0], bad=[0.0, 0.0, 0.5]) == "█○✗"


async def test_write_confirmation_needs_the_exact_name() -> None:
    for typed, expected in (("/dev/loop9", True), ("/dev/loop", False)):
        app = ConfirmDestroyApp("/dev/loop9", "write", ["ext4"])
        async with app.run_test() as pilot:
            await pilot.press(*typed, "enter")
        assert app.return_value is expected
    app = ConfirmDestroyApp("/dev/loop9", "write", [])
    async with app.run_test() as pilot:
        await pilot.press("escape")
    assert app.return_value is False


async def test_warmup_pane_shows_the_kernel_view_of_the_device(tmp_path) -> None:
    await asyncio.to_thread(warm_up_kernels)
    with loop_device(64 << 20) as dev:
        name = os.path.basename(dev)
        settings = WarmupSettings(dev, bs=4096, iodepth=1, rate_iops=4000, interval_s=0.25,
                                  checkpoint=str(tmp_path / "c.json"))  # fmt: skip
        probes = [DiskProbe(0.25, devices=[name]), WarmupProbe(settings)]
        app = make_app(LiveView(probes=probes, display=Display(interval_s=0.25, focus="warmup")))
        async with app.run_test(size=(120, 50)) as pilot:
            pane = await _wait_for(
                app, WarmupPane, lambda p: p.samples_seen > 1 and p.kernel and p.kernel.read_iops
            )
            await pilot.pause()
            pane.render_frame()
            assert f"kernel {name}:" in pane.progress.text


async def test_warmup_pane_shows_a_row_per_pass_and_a_total(tmp_path) -> None:
    """--write --read: the pane adds the passes up from the samples, each row
    with its outcome from the bytes done, and a total row."""
    await asyncio.to_thread(warm_up_kernels)
    target = tmp_path / "vol.img"
    with open(target, "wb") as f:
        f.truncate(8 << 20)
    settings = WarmupSettings(
        str(target), pass_name="write+read", bs=65536, iodepth=1, rate_iops=200,
        interval_s=0.25, checkpoint=str(tmp_path / "c.json"), direct=False, confirmed=True,
    )  # fmt: skip
    app = make_app(
        LiveView(probes=[WarmupProbe(settings)], display=Display(interval_s=0.25, focus="warmup"))
    )
    async with app.run_test(size=(120, 50)) as pilot:
        pane = await _wait_for(
            app,
            WarmupPane,
            lambda p: "read" in p.pass_rows and p.last_status and p.last_status.level == "stopped",
            tries=600,
        )
        await pilot.pause()
        pane.render_frame()
        lines = pane.pass_block.text.splitlines()
        rows = {line.split()[0]: line for line in lines[1:]}
        assert set(rows) == {"write", "read", "total"}, lines
        assert rows["write"].rstrip().endswith("completed"), lines
        assert rows["read"].rstrip().endswith("completed"), lines
        assert rows["total"].rstrip().endswith("completed"), lines
        # both passes covered the 8 MiB (added up from the interval rates)
        for name in ("write", "read"):
            assert abs(pane.pass_rows[name].bytes - (8 << 20)) <= (8 << 20) * 0.02
        # 16 MiB in the units every pane writes bytes in (not fio's MiB)
        assert re.search(r" 1[67]\.\d MB ", rows["total"]), lines


def test_a_spark_label_always_leaves_a_blank_before_the_bars() -> None:
    """The row cuts its label at LABEL_CELLS: every label leaves the last of
    them blank ("read IOPS  1013 IO/s" filled all 28 and ran into the bars),
    keeps its whole unit, and a long latency reads in ms or s, never with an
    SI prefix on µs ("12.3k µs")."""
    from probetop.tui.ui.widgets.sparkrow import LABEL_CELLS
    from probetop.tui.ui.widgets.sparkrow import value_label as spark_label

    rows = [  # the IOPS and warm-up panes' sparkline rows
        *((f"{d} IOPS", "IO/s") for d in ("read", "write")),
        *((f"p99 {d} latency", "µs") for d in ("read", "write")),
        ("throughput", "B/s"),
        ("IOPS", "IO/s"),
    ]
    for label, unit in rows:
        for value in (None, 0, 7.5, 99.9, 1013, 99_999, 123_456_789):
            text = spark_label(label, value, unit)
            assert len(text) <= LABEL_CELLS - 1, text
            units = ("µs", " ms", " s") if unit == "µs" else (unit,)
            assert text.startswith(label + " ") and text.endswith(units), text
    assert spark_label("p99 write latency", 9_999, "µs").endswith(" 9999 µs")
    assert spark_label("p99 write latency", 12_345, "µs").endswith(" 12.3 ms")
    assert spark_label("p99 write latency", 123_456_789, "µs").endswith(" 123 s")


def test_iops_pane_shows_the_nfs_clients_view_where_the_target_is_on_nfs() -> None:
    """A target on NFS has no block device: the kernel column gives way to the
    NFS client's per-op view (nfsiostat's figures) the sample carries, read
    back through the recording layout."""
    from probetop.probes.disk import IopsInterval, IopsParams

    params = IopsParams(
        target="/mnt/nfs/d", rw="write", rwmixread=None, bs=1, jobs=20, iodepth=1, offset=0,
        size=1, direct=True, sync=True, time_s=30, ramp_s=0.0, rate_iops=None, interval_s=1.0,
        engine="psync", backing_device=None,
    )  # fmt: skip
    info = {"id": "iops:/mnt/nfs/d", "kind": "iops", "params": params.as_dict()}
    pane = IopsPane(info)
    nfs = {
        "WRITE": {"ops_per_s": 1812.0, "kb_per_op": 0.37, "avg_rtt_ms": 10.5, "avg_exe_ms": 10.9},
        "GETATTR": {"ops_per_s": 2.0, "kb_per_op": 0.43, "avg_rtt_ms": 0.2, "avg_exe_ms": 0.3},
    }
    sample = IopsInterval(read=None, write=None, errors_per_s=0.0, nfs=nfs).to_sample(
        pane.probe_id, 1, 1.0
    )
    pane.interval = IopsInterval.from_sample(sample)
    text = "\n".join(pane.compare_lines())
    assert "kernel: NFS (below)" in text.splitlines()[0]
    rows = text.splitlines()
    head = next(i for i, r in enumerate(rows) if r.startswith("NFS client"))
    assert rows[head].split()[2:] == ["ops/s", "kB/op", "RTT", "ms", "exe", "ms"]
    assert rows[head + 1].split() == ["write", "1812", "0.37", "10.5", "10.9"], rows[head + 1]
    assert rows[head + 2].split()[0] == "getattr"  # busiest first
