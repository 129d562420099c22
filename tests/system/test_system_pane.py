"""The system panes in the app: one row per device with its sparkline, idle
and virtual devices hidden until ``i``, columns that fit the pane, headlines."""

from __future__ import annotations

import time

from probetop.probes.core.base import describe
from probetop.probes.core.hub import Hub
from probetop.probes.core.passive import DiskCounters, NicCounters
from probetop.probes.core.sample import Announce, Record, SeriesEnded
from probetop.probes.system import (
    CoreReading,
    CpuLoadInterval,
    CpuLoadProbe,
    DiskInterval,
    DiskProbe,
    NetInterval,
    NetProbe,
)
from probetop.tui.run.viewconfig import LiveView
from probetop.tui.ui.app import ProbetopApp, make_app
from probetop.tui.ui.panes.system import IDLE_WINDOW, CpuPane, DiskPane, NetPane
from textual.pilot import Pilot


def nic(name: str, pps: float) -> NicCounters:
    return NicCounters(name, pps, pps, pps * 100, pps * 100, 0.0, 0.0, 0.0, 0.0)


def disk(name: str, iops: float) -> DiskCounters:
    return DiskCounters(name, iops, 0.0, iops * 4096, 0.0, 0.1, None, 1.0)


async def route_and_draw(app: ProbetopApp, pilot: Pilot[int], records: list[Record]) -> None:
    """Route ``records`` and let the app run until every pane they reach is
    mounted and drawn (one ``pilot.pause()`` was not always enough on a
    loaded CI box: a pane mounted after the routing is drawn a refresh
    later, and the net pane still read "waiting for the first sample")."""
    app.route(records)
    probes = {r.probe for r in records}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        await pilot.pause(0.02)
        panes = [app.panes.get(p) for p in probes]
        if all(p is not None and p.is_mounted for p in panes) and not probes & app._dirty:
            return
    raise AssertionError(f"panes {sorted(probes)} were not drawn in 30 s")


def net_records(seconds: int, traffic: dict[str, list[float]]) -> list[Record]:
    records: list[Record] = [Announce("system.net", 0, describe(NetProbe()))]
    for i in range(seconds):
        nics = {name: nic(name, pps[i] if i < len(pps) else 0.0) for name, pps in traffic.items()}
        records.append(NetInterval(nics).to_sample((i + 1) * 10**9, 1.0))
    return records


async def test_net_pane_hides_idle_and_virtual_interfaces_until_i() -> None:
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(120, 40)) as pilot:
        traffic = {
            "lo": [5.0] * 3,  # active: shown
            "eth0": [0.0] * 3,  # never carried a packet: hidden
            "ifb0": [0.0] * 3,  # virtual and idle: hidden
            "veth9": [7.0] + [0.0] * (IDLE_WINDOW + 5),  # virtual, idle for > a minute: hidden
        }
        await route_and_draw(app, pilot, net_records(IDLE_WINDOW + 6, traffic))
        pane = app.panes["system.net"]
        assert isinstance(pane, NetPane)
        assert pane.shown_entities() == ["lo"]
        text = pane.table.lines
        assert text[0].split()[:3] == ["nic", "rx", "pkt/s"]
        assert text[1].split()[0] == "lo"
        assert text[-1].startswith("3 idle hidden: eth0 ifb0 veth9") and "(i: show)" in text[-1]
        # one row per interface: the sparkline is on the row, not on a row of its own
        assert [r.values is not None for r in pane.table.rows] == [False, True, False]
        assert max(pane.table.rows[1].values or ()) == 10.0  # rx + tx pkt/s
        await pilot.press("i")
        await pilot.pause()
        assert pane.shown_entities() == ["lo", "eth0", "ifb0", "veth9"]
        assert len(pane.table.rows) == 5 and "hidden" not in pane.table.text
        await pilot.press("i")
        await pilot.pause()
        assert pane.shown_entities() == ["lo"]


async def test_disk_pane_keeps_idle_disks_and_hides_idle_loop_devices() -> None:
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(120, 40)) as pilot:
        records: list[Record] = [Announce("system.disk", 0, describe(DiskProbe()))]
        for i in range(3):
            disks = {"vda": disk("vda", 0.0), "loop0": disk("loop0", 0.0), "sdb": disk("sdb", 50.0)}
            records.append(DiskInterval(disks).to_sample((i + 1) * 10**9, 1.0))
        await route_and_draw(app, pilot, records)
        pane = app.panes["system.disk"]
        assert isinstance(pane, DiskPane)
        assert pane.shown_entities() == ["vda", "sdb"]
        assert "1 idle hidden: loop0" in pane.table.text
        assert pane.headline_text() == "sdb 50.0 r+w IO/s"


async def test_columns_left_out_in_a_narrow_pane_come_back_when_wide() -> None:
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(60, 30)) as pilot:
        records: list[Record] = [Announce("system.disk", 0, describe(DiskProbe()))]
        records.append(DiskInterval({"vda": disk("vda", 10.0)}).to_sample(10**9, 1.0))
        await route_and_draw(app, pilot, records)
        pane = app.panes["system.disk"]
        narrow = pane.table.lines[0]
        assert "r IO/s" in narrow and "r ms" not in narrow  # latency goes first
        await pilot.resize_terminal(160, 40)
        await pilot.pause()
        await pilot.pause()
        wide = pane.table.lines[0]
        assert "r ms" in wide and "busy%" in wide and "r+w IO/s" in wide


async def test_cpu_pane_reads_its_record_and_fits_the_summary() -> None:
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(70, 30)) as pilot:
        records: list[Record] = [Announce("system.cpu", 0, describe(CpuLoadProbe()))]
        cores = {f"cpu{i}": CoreReading(10.0 * i, 2600.0) for i in range(4)}
        for i in range(3):
            records.append(CpuLoadInterval(15.0, cores, 1.5, 1.0, 0.5).to_sample(i * 10**9, 1.0))
        await route_and_draw(app, pilot, records)
        pane = app.panes["system.cpu"]
        assert isinstance(pane, CpuPane)
        assert pane.core_names() == ["cpu0", "cpu1", "cpu2", "cpu3"]
        width = pane.content_size.width
        assert all(len(line) <= width for line in pane.table.lines[2:])
        assert len(pane.table.lines[2:]) == 2  # two cores a line: MHz left out to fit
        assert pane.table.lines[1].startswith("load avg 1.50 1.00 0.50")
        assert len(pane.table.lines[1]) <= width
        assert pane.headline_text() == "busy 15.0 %  load 1.50  4 cores"


async def test_interfaces_that_go_away_are_freed() -> None:
    """Issue 29: a veth per container, created and removed for hours, must
    not leave a row (and its sparkline) per interface ever seen."""
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(120, 40)) as pilot:
        records: list[Record] = [Announce("system.net", 0, describe(NetProbe()))]
        for i in range(200):
            nics = {"eth0": nic("eth0", 10.0), f"veth{i}": nic(f"veth{i}", 5.0)}
            records.append(NetInterval(nics).to_sample((i + 1) * 10**9, 1.0))
        await route_and_draw(app, pilot, records)
        pane = app.panes["system.net"]
        assert isinstance(pane, NetPane)
        assert sorted(pane.counters) == ["eth0", "veth199"]
        assert sorted(pane.sums) == ["eth0", "veth199"]
        assert set(pane.last_active) <= {"eth0", "veth199"}


async def test_interfaces_that_go_away_leave_no_history_through_the_hub() -> None:
    """The same churn through the hub, as a live run and a replay get it: the
    series end the hub adds free each gone interface's history too (the
    statistics and the maximised chart kept every interface ever seen)."""
    hub = Hub()
    sub = hub.subscribe(lossless=True)
    probe = NetProbe()
    hub.series.watch(probe.id, whole=probe.lists_every_entity)
    records: list[Record] = [Announce("system.net", 0, describe(probe))]
    for i in range(200):
        nics = {"eth0": nic("eth0", 10.0), f"veth{i}": nic(f"veth{i}", 5.0)}
        hub.publish(NetInterval(nics).to_sample((i + 1) * 10**9, 1.0))
    records += sub.drain()
    assert sum(isinstance(r, SeriesEnded) for r in records) == 199
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(120, 40)) as pilot:
        await route_and_draw(app, pilot, records)
        pane = app.panes["system.net"]
        assert pane.history.entities() == ["eth0", "veth199"]
