"""The icmp pane in the real app, fed by a live probe to 127.0.0.1 and the NIC counters."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from privilege import icmp_mode, needs_icmp
from probetop.probes.core.sample import Sample
from probetop.probes.icmp import IcmpProbe, IcmpSettings, RttBucket, RttStats
from probetop.probes.record.reader import load_session
from probetop.probes.system.collectors import NetProbe
from probetop.tui.run.viewconfig import Display, LiveView, ReplayView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.icmp import IcmpPane, fmt_rtt, rtt_distribution, rtt_line
from probetop.tui.ui.widgets.registry import pane_class

OLD_RECORDING = Path(__file__).resolve().parent / "data" / "icmp_session_0_1.jsonl"
PROBE_ID = "icmp:10.77.88.2"


def test_registry_maps_icmp_to_its_pane() -> None:
    assert pane_class("icmp") is IcmpPane


def test_rtt_distribution_row() -> None:
    row = rtt_distribution(
        [RttBucket(1.0, 2.0, 10.0), RttBucket(2.0, 4.0, 80.0), RttBucket(4.0, 8.0, 0.0)]
    )
    assert row.startswith("rtt distribution 1.00 µs") and row.endswith("8.00 µs")
    assert "█" in row
    assert rtt_distribution([]) == "rtt distribution: -"


@needs_icmp
async def test_pane_shows_mode_rates_and_the_kernel_counter() -> None:
    probe = IcmpProbe(IcmpSettings("127.0.0.1", rate=2000.0, interval_s=0.25))
    probe.prepare()
    app = make_app(
        LiveView(probes=[NetProbe(0.25), probe], display=Display(interval_s=0.25, focus="icmp"))
    )
    async with app.run_test(size=(140, 40)) as pilot:
        pane = None
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(IcmpPane))
            if panes and panes[0].samples_seen >= 3 and panes[0].nic_seen:
                pane = panes[0]
                break
        assert pane is not None
        await pilot.pause()
        pane.render_frame()
        text = pane.table.text
        mode = "raw socket" if icmp_mode() == "raw" else "datagram socket (unprivileged)"
        assert f"{mode} · 2000 req/s" in text and "via lo" in text
        assert "rtt distribution" in text and "µs" in text
        pps = pane.history.get("pps")
        # pps counts requests and replies: above the 2000 requests/s, at
        # most the 4000 of the set rate (a loaded machine sends fewer: 3,092
        # seen at load 16; the probe's own rate tests hold the pacer).
        assert pps is not None and 2400 < pps.latest <= 4000 * 1.02, pps.latest
        # The kernel's loopback counter sees the same packets (and maybe a few more).
        assert "kernel lo tx" in pane.nic_row.label.text
        assert max(v for v in pane.nic_tx if v is not None) >= 3000
        assert "probe pps" in pane.chart_series()


async def test_idle_pane_says_why() -> None:
    probe = IcmpProbe(IcmpSettings("127.0.0.1", rate=200.0), idle_reason="needs CAP_NET_RAW")
    app = make_app(LiveView(probes=[probe], display=Display(focus="icmp")))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        pane = app.query_one(IcmpPane)
        pane.render_frame()
        assert pane.table.text == "idle: needs CAP_NET_RAW"


@needs_icmp
async def test_add_probe_action_starts_an_icmp_pane() -> None:
    app = make_app(LiveView(probes=[NetProbe(0.25)], display=Display(interval_s=0.25)))
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.add_probe_line("icmp --rate 100 --sample-interval 0.25 ::1")
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(IcmpPane))
            if panes and panes[0].samples_seen:
                break
        await pilot.pause()
        pane = app.query_one(IcmpPane)
        assert pane.probe_id == "icmp:::1" and pane.samples_seen >= 1
        assert not app.add_probe_line("icmp --size 70000 ::1")  # refused: notified, no pane
        assert len(list(app.query(IcmpPane))) == 1


def test_old_recording_reads_through_the_typed_records() -> None:
    session = load_session(OLD_RECORDING)
    pane = IcmpPane(session.header_probes()[PROBE_ID])
    samples = [r for _t, r in session.records() if isinstance(r, Sample)]
    assert len(samples) == 5
    for sample in samples:
        pane.add_sample(sample)
    lines = pane.table_lines()
    assert lines[0] == (
        "raw socket · 100 req/s · 10.77.88.2 via ptirech · 56 B payload · grace 0.3 s"
    )
    assert lines[1] == "requests 31.2/s  replies 28.1/s  56.2 pps  loss 43.8 %"
    assert lines[2] == "lost 7  duplicates 0  reordered 0  late 0  in flight 0"
    assert lines[3] == "RTT µs min/avg/max/mdev 5.77/28.5/62.4/21.3  p50/p90/p99 18.2/62.0/62.0"
    assert lines[4].startswith("rtt distribution 5.12 µs") and lines[4].endswith("65.5 µs")
    pane.add_sample(samples[0])
    assert pane.table_lines()[-1] == "errors: destination unreachable 6 from 10.77.88.2"
    # The kernel's view of the interface that routes to the target, via NicCounters.
    other = Sample("system.net", 1, 1.0, {"rx_pps@eth9": 5.0, "tx_pps@eth9": 5.0})
    pane.observe(other)
    assert not pane.nic_seen
    pane.observe(Sample("system.net", 2, 1.0, {"rx_pps@ptirech": 90.0, "tx_pps@ptirech": 100.0}))
    assert pane.nic_seen and list(pane.nic_tx) == [100.0]
    series = pane.chart_series()
    assert set(series) == {
        "probe pps",
        "replies/s",
        "loss %",
        "RTT p99 µs",
        "kernel ptirech tx pps",
    }


def test_rtt_in_ms_once_the_median_reaches_a_millisecond() -> None:
    assert fmt_rtt(3.64) == "3.64 µs" and fmt_rtt(12_500.0) == "12.5 ms" and fmt_rtt(None) == "-"
    slow = RttStats(9_000.0, 12_000.0, 40_000.0, 3_000.0, 11_000.0, 20_000.0, 39_000.0)
    assert (
        rtt_line(slow) == "RTT ms min/avg/max/mdev 9.00/12.0/40.0/3.00  p50/p90/p99 11.0/20.0/39.0"
    )


async def test_old_recording_replays_in_the_icmp_pane() -> None:
    app = make_app(ReplayView(load_session(OLD_RECORDING), speed=math.inf))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = None
        for _ in range(1200):  # up to 60 s on a loaded machine
            await asyncio.sleep(0.05)
            panes = list(app.query(IcmpPane))
            if panes and panes[0].samples_seen == 5:
                pane = panes[0]
                break
        assert pane is not None
        await pilot.pause()
        pane.render_frame()
        assert "100 req/s · 10.77.88.2 via ptirech" in pane.table.text
        assert "loss" in pane.loss_row.label.text and "43.8 %" in pane.loss_row.label.text
        assert "pps" in pane.pps_row.label.text
