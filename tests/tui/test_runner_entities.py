"""Headless runs on a host whose interfaces come and go (issue 29, Want 8):
the report marks vanished devices as gone, and past KEEP_GONE of them the
longest gone are forgotten (counted), so memory stays bounded."""

from __future__ import annotations

import io

from probetop.probes.core.sample import Sample, SeriesEnded
from probetop.probes.core.stats import RunningStats
from probetop.tui.run import runner
from probetop.tui.run.runner import KEEP_GONE, Entities, RunResult, generic_report

S = 1_000_000_000


def _sample(t_s: int, nics: list[str]) -> Sample:
    values = {f"rx_pps@{nic}": 1.0 for nic in nics}
    return Sample("system.net", t_s * S, 1.0, values)


def _feed(entities: Entities, stats: dict, t_s: int, nics: list[str]) -> None:
    sample = _sample(t_s, nics)
    per = stats.setdefault("system.net", {})
    for key, value in sample.values.items():
        per.setdefault(key, RunningStats()).add(value)
    entities.seen(sample, t_s * S)


def test_a_vanished_interface_is_gone_and_old_ones_are_forgotten() -> None:
    stats: dict = {}
    entities = Entities(stats)
    # eth0 always there; veth0..veth(KEEP_GONE + 4) each live for 2 s, one after the other
    churn = KEEP_GONE + 5
    for i in range(churn):
        for t in (3 * i, 3 * i + 1):
            _feed(entities, stats, t, ["eth0", f"veth{i}"])
    end = 3 * churn + 60
    _feed(entities, stats, end, ["eth0"])
    gone = entities.gone("system.net", end * S)
    assert "eth0" not in gone and len(gone) == churn
    entities.forget_oldest(end * S)
    assert entities.forgotten == {"system.net": 5}
    kept = {k.split("@")[1] for k in stats["system.net"]}
    assert kept == {"eth0"} | {f"veth{i}" for i in range(5, churn)}  # the 5 oldest dropped
    assert entities.gone("system.net", end * S) == {f"veth{i}" for i in range(5, churn)}


def test_the_text_report_marks_gone_devices_and_counts_forgotten_ones() -> None:
    class Probe:
        id, kind, metrics = "system.net", "net", ()

    stats = {"system.net": {"rx_pps@eth0": RunningStats(), "rx_pps@veth9": RunningStats()}}
    for s in stats["system.net"].values():
        s.add(1.0)
    result = RunResult(
        probes=[Probe()],  # type: ignore[list-item]
        summaries={},
        errors={},
        samples={},
        duration_s=100.0,
        reason="time",
        stats=stats,
        gone={"system.net": {"veth9"}},
        forgotten={"system.net": 40},
    )
    out = io.StringIO()
    generic_report(result, out=out)
    text = out.getvalue()
    assert "rx_pps@veth9 (gone)" in text and "rx_pps@eth0 (gone)" not in text
    assert "and 40 more devices that came and went" in text
    assert runner.GONE_AFTER_S <= 60


def test_an_ended_series_is_gone_at_once_until_the_device_comes_back() -> None:
    stats: dict = {}
    entities = Entities(stats)
    _feed(entities, stats, 1, ["eth0", "veth0"])
    entities.ended(SeriesEnded("system.net", 2 * S, "veth0", 1 * S, "vanished", {}))
    assert entities.gone("system.net", 2 * S) == {"veth0"}  # not 10 s later
    _feed(entities, stats, 3, ["eth0", "veth0"])
    assert entities.gone("system.net", 3 * S) == set()


def test_an_idle_probe_says_why_in_the_text_report() -> None:
    """The demo's ICMP probe where ICMP is not allowed (a user outside
    ping_group_range, no CAP_NET_RAW): the headless report says why, as the
    pane does, rather than printing an empty section."""
    import asyncio

    from probetop.probes.icmp import IcmpProbe, IcmpSettings
    from probetop.probes.icmp.family import DEMO_IDLE_REASON

    probe = IcmpProbe(IcmpSettings("127.0.0.1", rate=200.0), idle_reason=DEMO_IDLE_REASON)
    probe.prepare()
    result = asyncio.run(runner.run_headless([probe], duration_s=0.3))
    out = io.StringIO()
    assert generic_report(result, out=out) == 0
    section = out.getvalue().split(f"== {probe.id} (icmp)\n")[1]
    assert section.startswith(f"   idle: {DEMO_IDLE_REASON}\n"), section
    assert "ping_group_range" in section and "cap_net_raw" in section
