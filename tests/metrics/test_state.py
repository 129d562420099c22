"""Trackers fed typed samples (made with each family's own ``to_sample``):
gauges that keep their last answer, counters that never go back, exact
ICMP buckets."""

from __future__ import annotations

import dataclasses

from probetop.probes import icmp
from probetop.probes.core.sample import Announce, Status
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
    # smokeping_prober's default bounds: 10.24 µs <= 50 µs; 1.31072 ms <= 1.6 ms
    assert count_at[5e-05] == 3
    assert count_at[0.0008] == 3 and count_at[0.0016] == 4
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


def test_two_probes_of_one_host_are_one_smokeping_series() -> None:
    """smokeping keys a target's series by ip/host/source/tos only: two probes
    of one host are one series whose counters and histogram add up; the
    receive-error counter (no labels, one per process) sums every probe's;
    probetop's own series stay per probe."""
    state = MetricsState()
    for pid in ("icmp:h", "icmp:h#2"):
        state.feed(Announce(pid, 0, {**ICMP_INFO, "id": pid}))
    state.feed(_icmp(3, 1, [(8.192, 10.24, 3.0)]).to_sample("icmp:h", 1, 1.0))
    state.feed(_icmp(2, 0, [(1048.576, 1310.72, 2.0)]).to_sample("icmp:h#2", 1, 1.0))
    points = state.points()
    keys = [(p.metric.name, p.labels) for p in points]
    assert len(keys) == len(set(keys))  # no series twice in one scrape
    by_name: dict[str, list] = {}
    for p in points:
        by_name.setdefault(p.metric.name, []).append(p)
    (requests,) = by_name["smokeping_requests"]
    assert requests.labels == ("192.0.2.1", "h", "", "0") and requests.value == 6
    (rtt,) = by_name["smokeping_response_duration_seconds"]
    assert rtt.value.count == 5 and dict(rtt.value.buckets)[5e-05] == 3
    (receive,) = by_name["smokeping_receive_errors"]
    assert receive.labels == ()
    assert sorted(p.labels[-1] for p in by_name["probetop_icmp_lost"]) == ["icmp:h", "icmp:h#2"]
    # a recording's export sees the same merged series from either probe
    merged = {(p.metric.name, p.labels): p.value for p in points}
    for pid in ("icmp:h", "icmp:h#2"):
        for p in state.probe_points(pid):
            assert merged[(p.metric.name, p.labels)] == p.value


def test_smokeping_series_are_there_from_the_start_as_smokepings_are() -> None:
    """smokeping_prober creates every per-target series at 0 with the target
    (collector.go updateProbes, TTL included) and its prober-error counter
    (main.go, no labels) at 0; blackbox's hop limit only once a reply came."""
    state = MetricsState()
    state.feed(Announce("icmp:h", 0, ICMP_INFO))
    v = _values(state)
    for name in (
        "smokeping_requests_total",
        "smokeping_response_ttl",
        "smokeping_response_duplicates_total",
        "smokeping_send_errors_total",
        "smokeping_receive_errors_total",
        "smokeping_prober_errors_total",
        "smokeping_response_duration_seconds_count",
    ):
        assert v[name] == 0, name
    assert "probe_icmp_reply_hop_limit" not in v
    state.feed(dataclasses.replace(_icmp(2, 0), ttl=63).to_sample("icmp:h", 1, 1.0))
    v = _values(state)
    assert v["smokeping_response_ttl"] == 63 == v["probe_icmp_reply_hop_limit"]


def test_prober_errors_count_probes_that_ended_failed() -> None:
    """smokeping_prober_errors_total: pingers whose Run returned an error; here
    probes the hub stopped as failed or crashed, every ICMP probe's summed."""
    state = MetricsState()
    for pid in ("icmp:h", "icmp:h#2", "icmp:h#3"):
        state.feed(Announce(pid, 0, {**ICMP_INFO, "id": pid}))
    assert state.feed(Status("icmp:h", 1, "stopped", "failed"))
    assert state.feed(Status("icmp:h#2", 1, "stopped", "crashed"))
    assert not state.feed(Status("icmp:h#3", 1, "stopped", "finished"))
    assert not state.feed(Status("icmp:h#3", 1, "error", "sendto: ENOBUFS"))
    assert not state.feed(Status("nobody", 1, "stopped", "failed"))
    (errors,) = [p for p in state.points() if p.metric.name == "smokeping_prober_errors"]
    assert errors.labels == () and errors.value == 2


def test_https_series_follow_blackbox() -> None:
    """blackbox's TLS series only while the URL's latest response came over
    TLS; Go's version names; a cipher only under its IANA name; the timeout
    only with -m."""
    from probetop.probes.http.records import HttpInterval, TlsFacts, UrlInterval

    url = "https://127.0.0.1:8443/"
    info = {
        "id": "http:x",
        "kind": "http",
        "params": {"urls": [url], "labels": [url], "request": {"timeout_s": 2.5}},
    }
    state = MetricsState()
    state.feed(Announce("http:x", 0, info))
    facts = TlsFacts("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256", (2000, 1000, 3000))
    tls = HttpInterval(
        urls=(UrlInterval(label=url, http_code=200, total_ms=1.0, requests=1, ssl=True),),
        requests=1,
        errors=0,
        tls={url: facts},
    )
    state.feed(tls.to_sample("http:x", 1, 1.0))
    by_name = {p.metric.exposed_name: p for p in state.points()}
    assert by_name["probe_http_ssl"].value == 1
    assert by_name["probe_ssl_earliest_cert_expiry"].value == 1000
    assert by_name["probe_tls_version_info"].labels[-1] == "TLS 1.2"
    assert "probe_tls_cipher_info" not in by_name  # OpenSSL's name, not Go's
    assert by_name["probe_timeout_seconds"].value == 2.5
    # redirected to http:// (or any response not over TLS): no TLS series
    plain = HttpInterval(
        urls=(UrlInterval(label=url, http_code=200, total_ms=1.0, requests=1),),
        requests=1,
        errors=0,
    )
    state.feed(plain.to_sample("http:x", 2, 1.0))
    names = {p.metric.exposed_name for p in state.points()}
    assert "probe_http_ssl" in names
    assert not {n for n in names if n.startswith(("probe_ssl_", "probe_tls_"))}
