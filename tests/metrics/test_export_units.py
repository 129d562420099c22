"""The value and unit of every exported metric, against the recording's own
numbers in their recorded units (tests/data/demo_session.jsonl, a run of
every family): a ``_ratio`` is 0-1 (``progress_pct / 100``), a ``_seconds``
is seconds (``ms / 1000``, ``us / 1e6``), ``_bytes`` bytes. Each expected
value is written here by hand from the recording's last sample or its
footer, never through the product's converters: exporting
``probetop_warmup_progress_ratio`` as a percent (11.32 for 0.1132), or a
latency in milliseconds, fails. The table must name every family the
export writes: a new metric without its check fails the last test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from metrics_fixtures import PROBETOP, parse

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo_session.jsonl"
LINES = [json.loads(ln) for ln in DEMO.read_text().splitlines()]
SUMMARIES: dict[str, Any] = LINES[-1]["summaries"]
LAST: dict[str, dict[str, float]] = {}
for _rec in LINES:
    if _rec.get("type") == "sample":
        LAST[_rec["probe"]] = _rec["values"]


def _receive_errors(pid: str) -> float:
    """Receive errors over the whole run: each sample's ``extra.errors``
    entries named "receive ..." (send errors are the others)."""
    total = 0.0
    for rec in LINES:
        if rec.get("type") == "sample" and rec["probe"] == pid:
            errors = (rec.get("extra") or {}).get("errors") or {}
            total += sum(n for name, n in errors.items() if name.startswith("receive "))
    return total


def _last_ttl(pid: str) -> float:
    """The last recorded reply TTL (``extra.ttl``), 0 when none was."""
    ttl = 0.0
    for rec in LINES:
        if rec.get("type") == "sample" and rec["probe"] == pid:
            ttl = float((rec.get("extra") or {}).get("ttl", ttl))
    return ttl


def _last_extra(pid: str) -> dict[str, Any]:
    """The extra of the probe's last sample."""
    extra: dict[str, Any] = {}
    for rec in LINES:
        if rec.get("type") == "sample" and rec["probe"] == pid:
            extra = rec.get("extra") or {}
    return extra


def _failed_probes(prefix: str) -> float:
    """Probes of ``prefix`` the recording says stopped failed or crashed."""
    return float(
        sum(
            1
            for rec in LINES
            if rec.get("type") == "status"
            and str(rec.get("probe")).startswith(prefix)
            and rec.get("level") == "stopped"
            and rec.get("message") in ("failed", "crashed")
        )
    )


def _timed(
    pid: str, n: Callable[[dict[str, Any]], float], mean_s: str, unit: float
) -> tuple[float, float]:
    """A summary's count and sum by hand: every timed observation of the
    run (samples whose ``mean_s`` value is there, outside a ramp), and
    their time (mean x count, ``unit`` to seconds)."""
    count = total = 0.0
    for rec in LINES:
        if rec.get("type") != "sample" or rec["probe"] != pid:
            continue
        mean = rec["values"].get(mean_s)
        if mean is None or (rec.get("extra") or {}).get("ramp"):
            continue
        count += n(rec)
        total += mean * unit * n(rec)
    return count, total


def _cpu_events(rec: dict[str, Any]) -> float:
    return float(sum(rec["extra"]["per_thread_events"]))


def _read_ios(rec: dict[str, Any]) -> float:
    return float(round(rec["values"]["read_iops"] * rec["interval"]))


def _probe(prefix: str) -> str:
    (pid,) = [p for p in SUMMARIES if p.startswith(prefix)]
    return pid


CPU, ICMP, HTTP, IOPS, WARMUP = (_probe(p) for p in ("cpu", "icmp:", "http:", "iops:", "warmup:"))
DELAY, BYTES = "127.0.0.1:38705/delay?ms=20", "127.0.0.1:38705/bytes?n=100000"
URLS = SUMMARIES[HTTP]["urls"]


def _url(label: str) -> dict[str, Any]:
    (doc,) = [d for k, d in URLS.items() if k == label]
    return doc


# (sample name, labels that pick the series, expected final value, relative tolerance)
Check = tuple[str, dict[str, str], Callable[[], float], float]
EXACT = 1e-9
CHECKS: list[Check] = [
    # cpu: events/s as recorded; the latency percentile from ms
    ("probetop_cpu_events_total", {}, lambda: SUMMARIES[CPU]["total_events"], EXACT),
    ("probetop_cpu_events_per_second", {}, lambda: LAST[CPU]["eps"], EXACT),
    ("probetop_cpu_event_latency_quantile_seconds", {"quantile": "0.95"},
     lambda: LAST[CPU]["lat_pct_ms"] / 1000, EXACT),
    ("probetop_cpu_event_latency_quantile_seconds_count", {},
     lambda: _timed(CPU, _cpu_events, "lat_avg_ms", 1e-3)[0], EXACT),
    ("probetop_cpu_event_latency_quantile_seconds_sum", {},
     lambda: _timed(CPU, _cpu_events, "lat_avg_ms", 1e-3)[1], 1e-6),
    ("probetop_cpu_threads", {}, lambda: SUMMARIES[CPU]["threads"], EXACT),
    ("probetop_cpu_info", {"threads": "1"}, lambda: 1.0, EXACT),
    # (the cpu histogram is not in this recording: test_latency_histograms)
    # icmp: rtt from microseconds, loss from percent
    ("smokeping_requests_total", {}, lambda: SUMMARIES[ICMP]["sent"], EXACT),
    ("smokeping_response_duration_seconds_count", {}, lambda: SUMMARIES[ICMP]["received"], EXACT),
    ("smokeping_response_duration_seconds_sum", {},
     lambda: SUMMARIES[ICMP]["rtt_us"]["avg"] / 1e6 * SUMMARIES[ICMP]["received"], 0.01),
    ("smokeping_response_duplicates_total", {}, lambda: SUMMARIES[ICMP]["duplicates"], EXACT),
    ("smokeping_send_errors_total", {}, lambda: LAST[ICMP]["send_errors"], EXACT),
    ("smokeping_receive_errors_total", {}, lambda: _receive_errors(ICMP), EXACT),
    # the recording predates the reply TTL in samples: smokeping's 0 before a reply
    ("smokeping_response_ttl", {}, lambda: _last_ttl(ICMP), EXACT),
    ("smokeping_prober_errors_total", {}, lambda: _failed_probes("icmp:"), EXACT),
    ("probe_icmp_duration_seconds", {"phase": "rtt"},
     lambda: LAST[ICMP]["rtt_avg_us"] / 1e6, EXACT),
    ("probetop_icmp_loss_ratio", {}, lambda: SUMMARIES[ICMP]["loss_pct"] / 100, EXACT),
    ("probetop_icmp_lost_total", {}, lambda: SUMMARIES[ICMP]["lost"], EXACT),
    ("probetop_icmp_reordered_total", {}, lambda: SUMMARIES[ICMP]["reordered"], EXACT),
    ("probetop_icmp_late_total", {}, lambda: SUMMARIES[ICMP]["late"], EXACT),
    ("probetop_icmp_error_replies_total", {}, lambda: LAST[ICMP]["icmp_errors"], EXACT),
    ("probe_success", {"url": f"http://{DELAY}"}, lambda: 1.0, EXACT),
    # http: the last request's phases, from ms (blackbox's phase names)
    ("probe_duration_seconds", {"url": f"http://{BYTES}"},
     lambda: LAST[HTTP][f"total_ms@{BYTES}"] / 1000, EXACT),
    ("probe_dns_lookup_time_seconds", {"url": f"http://{BYTES}"},
     lambda: LAST[HTTP][f"dns_ms@{BYTES}"] / 1000, EXACT),
    ("probe_http_duration_seconds", {"url": f"http://{BYTES}", "phase": "resolve"},
     lambda: LAST[HTTP][f"dns_ms@{BYTES}"] / 1000, EXACT),
    ("probe_http_duration_seconds", {"url": f"http://{BYTES}", "phase": "connect"},
     lambda: LAST[HTTP][f"tcp_ms@{BYTES}"] / 1000, EXACT),
    ("probe_http_duration_seconds", {"url": f"http://{BYTES}", "phase": "tls"},
     lambda: LAST[HTTP][f"tls_ms@{BYTES}"] / 1000, EXACT),
    ("probe_http_duration_seconds", {"url": f"http://{BYTES}", "phase": "processing"},
     lambda: LAST[HTTP][f"server_ms@{BYTES}"] / 1000, EXACT),
    ("probe_http_duration_seconds", {"url": f"http://{BYTES}", "phase": "transfer"},
     lambda: LAST[HTTP][f"transfer_ms@{BYTES}"] / 1000, EXACT),
    ("probe_http_status_code", {"url": f"http://{BYTES}"},
     lambda: LAST[HTTP][f"http_code@{BYTES}"], EXACT),
    # an http:// URL: no response over TLS (the recording has no extra "ssl")
    ("probe_http_ssl", {"url": f"http://{BYTES}"},
     lambda: float(BYTES in (_last_extra(HTTP).get("ssl") or [])), EXACT),
    ("probetop_http_requests_total", {"url": f"http://{DELAY}"},
     lambda: _url(DELAY)["requests"], EXACT),
    ("probetop_http_request_duration_seconds_count", {"url": f"http://{DELAY}"},
     lambda: _url(DELAY)["phases_ms"]["total"]["count"], EXACT),
    ("probetop_http_request_duration_seconds_sum", {"url": f"http://{DELAY}"},
     lambda: _url(DELAY)["phases_ms"]["total"]["mean"] / 1000 * 15, 0.001),
    ("probetop_http_ttfb_seconds_count", {"url": f"http://{DELAY}"},
     lambda: _url(DELAY)["phases_ms"]["total"]["count"], EXACT),
    ("probetop_http_ttfb_seconds_sum", {"url": f"http://{DELAY}"},
     lambda: _url(DELAY)["phases_ms"]["ttfb"]["mean"] / 1000 * 15, 0.001),
    # iops: rates as recorded, latencies from microseconds
    ("probetop_iops_ios_per_second", {"direction": "read"},
     lambda: LAST[IOPS]["read_iops"], EXACT),
    ("probetop_iops_bytes_per_second", {"direction": "read"},
     lambda: LAST[IOPS]["read_Bps"], EXACT),
    ("probetop_iops_completion_latency_quantile_seconds", {"direction": "read", "quantile": "0.5"},
     lambda: LAST[IOPS]["read_clat_p50_us"] / 1e6, EXACT),
    ("probetop_iops_completion_latency_quantile_seconds", {"direction": "read", "quantile": "0.99"},
     lambda: LAST[IOPS]["read_clat_p99_us"] / 1e6, EXACT),
    ("probetop_iops_completion_latency_quantile_seconds_count", {"direction": "read"},
     lambda: _timed(IOPS, _read_ios, "read_clat_mean_us", 1e-6)[0], EXACT),
    ("probetop_iops_completion_latency_quantile_seconds_sum", {"direction": "read"},
     lambda: _timed(IOPS, _read_ios, "read_clat_mean_us", 1e-6)[1], 1e-6),
    # the counters trail the summary by the stop's partial interval (test_export)
    ("probetop_iops_ios_total", {"direction": "read"},
     lambda: SUMMARIES[IOPS]["read"]["total_ios"], 0.1),
    ("probetop_iops_bytes_total", {"direction": "read"},
     lambda: SUMMARIES[IOPS]["read"]["io_bytes"], 0.1),
    ("probetop_iops_errors_total", {}, lambda: LAST[IOPS]["errors"], EXACT),
    ("probetop_iops_ramp", {}, lambda: 0.0, EXACT),
    ("probetop_iops_info", {"rw": "randread", "bs": "4096"}, lambda: 1.0, EXACT),
    # warm-up: progress from percent, sizes in bytes, eta in seconds
    ("probetop_warmup_progress_ratio", {}, lambda: LAST[WARMUP]["progress_pct"] / 100, EXACT),
    ("probetop_warmup_done_bytes", {}, lambda: LAST[WARMUP]["done_bytes"], EXACT),
    ("probetop_warmup_range_bytes", {}, lambda: LAST[WARMUP]["total_bytes"], EXACT),
    ("probetop_warmup_eta_seconds", {}, lambda: LAST[WARMUP]["eta_s"], EXACT),
    ("probetop_warmup_bytes_per_second", {}, lambda: LAST[WARMUP]["bw_Bps"], EXACT),
    ("probetop_warmup_bytes_total", {}, lambda: LAST[WARMUP]["done_bytes"], 0.001),
    ("probetop_warmup_ios_total", {}, lambda: LAST[WARMUP]["done_bytes"] / 4096, 0.001),
    ("probetop_warmup_errors_total", {}, lambda: LAST[WARMUP]["errors"], EXACT),
    ("probetop_warmup_steady", {}, lambda: 0.0, EXACT),  # the plateau was never reached
    ("probetop_warmup_info", {"bs": "4096"}, lambda: 1.0, EXACT),
    ("probetop_build_info", {"version": "0.1.0"}, lambda: 1.0, EXACT),
]  # fmt: skip


@pytest.fixture(scope="module")
def final() -> dict[str, list[Any]]:
    """Every sample of the demo's export, by sample name, in file order."""
    import subprocess

    out = subprocess.run([*PROBETOP, "export", str(DEMO), "-O", "openmetrics"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    by_name: dict[str, list[Any]] = {}
    for family in parse(out.stdout, openmetrics=True).values():
        for sample in family.samples:
            by_name.setdefault(sample.name, []).append(sample)
    return by_name


def _last(samples: list[Any], labels: dict[str, str]) -> float:
    picked = [s for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert picked, f"no series with {labels}"
    assert len({tuple(sorted(s.labels.items())) for s in picked}) == 1, f"{labels} is ambiguous"
    return float(picked[-1].value)


@pytest.mark.parametrize(("name", "labels", "expected", "tolerance"), CHECKS,
                         ids=[f"{c[0]}{c[1] or ''}" for c in CHECKS])  # fmt: skip
def test_value_and_unit(
    final: dict[str, list[Any]],
    name: str,
    labels: dict[str, str],
    expected: Callable[[], float],
    tolerance: float,
) -> None:
    assert name in final, f"{name} is not exported"
    got, want = _last(final[name], labels), float(expected())
    assert got == pytest.approx(want, rel=tolerance, abs=1e-12), (name, labels, got, want)


def test_ratios_stay_within_0_and_1(final: dict[str, list[Any]]) -> None:
    ratios = {n: s for n, s in final.items() if n.endswith("_ratio")}
    assert ratios
    for name, samples in ratios.items():
        assert all(0.0 <= float(s.value) <= 1.0 for s in samples), name


def test_every_exported_family_has_its_value_check(final: dict[str, list[Any]]) -> None:
    checked = {name for name, *_rest in CHECKS}
    exported = {n for n in final if not n.endswith("_bucket")}  # buckets: test_latency_histograms
    assert exported - checked == set(), "exported without a value/unit check"
