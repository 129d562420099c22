"""The icmp pane in the real app, fed by a live probe to 127.0.0.1 and the NIC counters."""

from __future__ import annotations

import asyncio
import os

import pytest
from probetop.probes.icmp.probe import IcmpOptions, IcmpProbe
from probetop.probes.system.collectors import NetProbe
from probetop.tui.app import make_app
from probetop.tui.config import AppConfig
from probetop.tui.panes.icmp import IcmpPane, rtt_distribution
from probetop.tui.widgets.registry import pane_class


def test_registry_maps_icmp_to_its_pane() -> None:
    assert pane_class("icmp") is IcmpPane


def test_rtt_distribution_row() -> None:
    row = rtt_distribution([[1.0, 2.0, 10.0], [2.0, 4.0, 80.0], [4.0, 8.0, 0.0]])
    assert row.startswith("rtt distribution 1.00 µs") and row.endswith("8.00 µs")
    assert "█" in row
    assert rtt_distribution([]) == "rtt distribution: -"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (raw ICMP sockets)")
async def test_pane_shows_mode_rates_and_the_kernel_counter() -> None:
    probe = IcmpProbe(IcmpOptions("127.0.0.1", rate=2000.0, interval_s=0.25))
    probe.prepare()
    app = make_app(AppConfig(probes=[NetProbe(0.25), probe], interval_s=0.25, focus="icmp"))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = None
        for _ in range(100):  # up to ~5 s
            await asyncio.sleep(0.05)
            panes = list(app.query(IcmpPane))
            if panes and panes[0].samples_seen >= 3 and panes[0].nic_seen:
                pane = panes[0]
                break
        assert pane is not None
        await pilot.pause()
        pane.render_frame()
        text = pane.table.text
        assert "raw socket · 2000 req/s" in text and "via lo" in text
        assert "rtt distribution" in text and "µs" in text
        pps = pane.history.get("pps")
        assert pps is not None and pps.latest == pytest.approx(4000, rel=0.1)
        # The kernel's loopback counter sees the same packets (and maybe a few more).
        assert "kernel lo tx" in pane.nic_row.label.text
        assert max(v for v in pane.nic_tx if v is not None) >= 3000
        assert "probe pps" in pane.chart_series()


async def test_idle_pane_says_why() -> None:
    probe = IcmpProbe(IcmpOptions("127.0.0.1", rate=200.0), idle_reason="needs CAP_NET_RAW")
    app = make_app(AppConfig(probes=[probe], focus="icmp"))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        pane = app.query_one(IcmpPane)
        pane.render_frame()
        assert pane.table.text == "idle: needs CAP_NET_RAW"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (raw ICMP sockets)")
async def test_add_probe_action_starts_an_icmp_pane() -> None:
    app = make_app(AppConfig(probes=[NetProbe(0.25)], interval_s=0.25))
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.add_probe_line("icmp --rate 100 --sample-interval 0.25 ::1")
        for _ in range(100):
            await asyncio.sleep(0.05)
            panes = list(app.query(IcmpPane))
            if panes and panes[0].samples_seen:
                break
        await pilot.pause()
        pane = app.query_one(IcmpPane)
        assert pane.probe_id == "icmp:::1" and pane.samples_seen >= 1
        assert not app.add_probe_line("icmp --size 70000 ::1")  # refused: notified, no pane
        assert len(list(app.query(IcmpPane))) == 1
