"""Trackers fed typed samples (made with each family's own ``to_sample``):
gauges that keep their last answer, counters that never go back, exact
ICMP buckets."""

from __future__ import annotations

from probetop.probes import icmp
from probetop.probes.core.sample import Announce
from probetop.probes.icmp.metrics import ICMP_BUCKETS_S
from probetop.tui.metrics.families import series_samples
from probetop.tui.metrics.state import MetricsState

ICMP_INFO = {"id": "icmp:h", "kind": "icmp", "params": {"host": "h", "address": "192.0.2.1"}}


def _icmp(replies: int, lost: int, buckets=(), avg_us: float | None = None) -> icmp.IcmpInterval:
    return icmp.IcmpInterval(
        requests_per_s=float(replies + lost),
        replies_per_s=float(replies),
        pps=2.0 * replies,
        loss_pct=100.0 * lost / (replies + lost) if replies + lost else None,
        lost=lost,
        duplicates=0,
        reordered=0,
        late=0,
        icmp_errors=0,
        send_errors=0,
        missed=0,
        in_flight=0,
        rtt=icmp.RttStats(avg_us=avg_us),
        rtt_hist=tuple(icmp.RttBucket(*b) for b in buckets) if buckets else None,
    )


def _values(state: MetricsState) -> dict[str, float]:
    out = {}
    for point in state.points():
        for name, labels, value in series_samples(point):
            key = name + ("" if "le" not in labels else f"@{labels['le']}")
            if isinstance(value, float):
                out[key] = value
    return out


def test_icmp_gauges_keep_the_last_answer_and_buckets_are_exact() -> None:
    state = MetricsState()
    state.feed(Announce("icmp:h", 0, ICMP_INFO))
    # 3 replies in [8.192, 10.24) µs, 1 in [1.048576, 1.31072) ms: high edges are bounds or below
    buckets = [(8.192, 10.24, 3.0), (1048.576, 1310.72, 1.0)]
    state.feed(_icmp(4, 0, buckets, avg_us=270.0).to_sample("icmp:h", 1_000_000_000, 1.0))
    v = _values(state)
    assert v["probe_success"] == 1 and v["probe_icmp_duration_seconds"] == 270e-6
    count_at = {
        b: n
        for k, n in v.items()
        if k.startswith("smokeping_response_duration_seconds_bucket@")
        for b in [float(k.split("@")[1])]
    }
    assert count_at[16.384e-6] == 3  # 10.24 µs <= 16.384 µs
    assert count_at[8.192e-6] == 0
    assert count_at[1.048576e-3] == 3 and count_at[2.097152e-3] == 4
    assert v["smokeping_response_duration_seconds_sum"] == 270e-6 * 4
    assert set(count_at) == {*ICMP_BUCKETS_S, float("inf")}
    # nothing resolved (ping -i 2 sampled each second): the gauges keep their answer
    state.feed(_icmp(0, 0).to_sample("icmp:h", 2_000_000_000, 1.0))
    assert _values(state)["probe_success"] == 1
    # only losses: failure
    state.feed(_icmp(0, 2).to_sample("icmp:h", 3_000_000_000, 1.0))
    v = _values(state)
    assert v["probe_success"] == 0 and v["probetop_icmp_loss_ratio"] == 1.0
    assert v["probe_icmp_duration_seconds"] == 270e-6  # the last RTT measured
    assert v["smokeping_requests_total"] == 6 and v["probetop_icmp_lost_total"] == 2


def test_a_reannounced_probe_keeps_counting() -> None:
    state = MetricsState()
    state.feed(Announce("icmp:h", 0, ICMP_INFO))
    state.feed(_icmp(5, 0).to_sample("icmp:h", 1, 1.0))
    state.feed(Announce("icmp:h", 2, ICMP_INFO))  # re-added from the prompt
    state.feed(_icmp(5, 0).to_sample("icmp:h", 3, 1.0))
    assert _values(state)["smokeping_requests_total"] == 10


def test_unknown_and_passive_kinds_give_no_metrics() -> None:
    state = MetricsState()
    assert not state.feed(Announce("system.cpu", 0, {"id": "system.cpu", "kind": "system.cpu"}))
    assert not state.feed(Announce("x", 0, {"id": "x", "kind": "dns"}))
    assert [p.metric.name for p in state.points()] == ["probetop_build"]
