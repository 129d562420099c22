"""The ICMP records keep probetop 0.1's layout: an old recording reads back
and lays out key for key, and the report of its summary is unchanged.

``data/icmp_session_0_1.jsonl`` was recorded by probetop 0.1 (before the
family got its typed records): 100 requests/s to a namespace peer that
rejects a quarter of them with host-unreachable, sampled every 0.5 s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from probetop.probes.core.sample import Sample
from probetop.probes.icmp import (
    IcmpInterval,
    IcmpParams,
    IcmpSummary,
    RttStats,
    exit_code,
    format_report,
    json_document,
)

OLD_RECORDING = Path(__file__).resolve().parent / "data" / "icmp_session_0_1.jsonl"
PROBE_ID = "icmp:10.77.88.2"

# That recording's summary as the report prints it since 0.3: ping's layout
# (0.1 printed its own "probetop icmp statistics" block, with RTT in µs).
OLD_REPORT = """\
PING 10.77.88.2 (10.77.88.2) 56(84) bytes of data.

probetop: raw socket, fixed rate
probetop: 67 replies/s, 134 packets/s through the target over 2.320 s of sending
probetop: rtt p50/p90/p99 = 0.012/0.058/0.372 ms
probetop: error: destination unreachable: 7 from 10.77.88.2
probetop: equivalent: ping -q -i 0.01 -s 56 10.77.88.2
--- 10.77.88.2 ping statistics ---
210 packets transmitted, 156 received, +7 errors, 25.7143% packet loss, time 2320ms
rtt min/avg/max/mdev = 0.003/0.050/4.079/0.325 ms
"""


def lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in OLD_RECORDING.read_text().splitlines()]


def ordered(obj: Any) -> str:
    """Equal dicts in the same key order give the same text."""
    return json.dumps(obj, ensure_ascii=False)


def sample_of(line: dict[str, Any]) -> Sample:
    return Sample(
        line["probe"], int(line["t"] * 1e9), line["interval"], line["values"], line["extra"]
    )


def test_old_samples_read_back_and_lay_out_key_for_key() -> None:
    samples = [sample_of(ln) for ln in lines() if ln["type"] == "sample"]
    assert len(samples) == 5
    for old in samples:
        record = IcmpInterval.from_sample(old)
        new = record.to_sample(old.probe, old.t_ns, old.interval_s)
        assert ordered(new.values) == ordered(old.values)
        assert ordered(new.extra) == ordered(old.extra)
    first = IcmpInterval.from_sample(samples[0])
    assert first.mode == "raw" and first.lost == 6 and first.in_flight == 6
    assert first.loss_pct == pytest.approx(13.636, abs=1e-3)
    assert first.rtt.p99_us == pytest.approx(372.736)
    assert first.rtt_hist is not None and first.rtt_hist[0].low_us == pytest.approx(6.144)
    assert first.errors == {"destination unreachable": 6}
    assert first.error_routers == {"destination unreachable": {"10.77.88.2": 6}}
    assert IcmpInterval.from_sample(samples[1]).errors == {}


def test_old_header_params_read_back() -> None:
    params = lines()[0]["probes"][0]["params"]
    typed = IcmpParams.from_params(params)
    assert ordered(typed.to_params()) == ordered(params)
    assert typed.settings.rate == 100.0 and typed.settings.interval_s == 0.5
    assert typed.mode_label == "raw socket"
    assert typed.target is not None and typed.target.interface == "ptirech"


def test_old_summary_reads_back_and_reports_as_before() -> None:
    summary = lines()[-1]["summaries"][PROBE_ID]
    typed = IcmpSummary.from_summary(summary)
    assert ordered(typed.to_dict()) == ordered(summary)
    assert typed.totals is not None and len(typed.totals.intervals) == 5
    assert format_report(summary) == OLD_REPORT
    text = format_report(summary, error="boom")
    assert text.splitlines()[3] == "probetop: error: boom"
    doc = json_document(PROBE_ID, summary, reason="time", error=None)
    assert list(doc) == ["probe", *summary, "reason", "error"]
    assert exit_code(summary, None) == 0 and exit_code(summary, "boom") == 1


def test_exit_codes_follow_ping() -> None:
    unanswered = {"target": "h", "sent": 5, "received": 0}
    assert exit_code(unanswered, None) == 1
    idle = {"target": "h", "address": None, "mode": None, "idle_reason": "needs CAP_NET_RAW"}
    assert exit_code(idle, None) == 0
    assert "probetop: ? socket, ?" in format_report(idle)
    assert "0 packets transmitted, 0 received\n" in format_report(idle)


def test_malformed_records_read_as_unknown() -> None:
    odd = Sample(PROBE_ID, 0, 1.0, {"pps": "fast", "lost": None}, {"rtt_hist_us": [[1, 2]]})
    record = IcmpInterval.from_sample(odd)
    assert record.pps is None and record.lost is None and record.rtt == RttStats()
    assert record.rtt_hist == () and record.errors == {}
    params = IcmpParams.from_params({"rate": "x", "streams": True})
    assert params.settings.host == "?" and params.settings.rate is None
    assert params.settings.streams == 1 and params.target is None
    assert IcmpSummary.from_summary(None).totals is None


def test_new_fields_round_trip_and_report() -> None:
    """0.2's summary fields (jitter, outage, drain, rate limit, per stream)
    read back key for key; the report shows them."""
    summary = lines()[-1]["summaries"][PROBE_ID]
    keys = list(summary)
    new = dict(summary)
    new.update(
        {
            "jitter_us": {"avg": 1.5, "max": 9.0},
            "outage_s": 0.54,
            "rate_limit": "replies look rate-limited by the target: net.ipv4.icmp_ratelimit",
            "drain_s": 0.3,
            "per_stream": [
                {
                    "stream": i,
                    "sent": 105,
                    "received": 78,
                    "lost": 27,
                    "loss_pct": 25.7,
                    "replies_per_second": 33.5,
                    "rtt_avg_us": 50.0,
                    "jitter_avg_us": 1.5,
                    "reference_command": "ping -q -i 0.02 -s 56 10.77.88.2",
                }
                for i in range(2)
            ],
        }
    )
    # The layout the writer uses: the new keys at their places.
    order = [*keys[: keys.index("errors")], "jitter_us", "outage_s", "errors", "error_routers"]
    order += ["rate_limit", "duration_s", "drain_s", "grace_s", "streams", "per_stream"]
    order += ["intervals", "stopped_by"]
    new = {k: new[k] for k in order}
    typed = IcmpSummary.from_summary(new)
    assert ordered(typed.to_dict()) == ordered(new)
    text = format_report(new)
    assert "time 2320ms" in text  # ping's: to the end of the last interval
    assert "jitter avg/max = 0.001/0.009 ms, outage 0.540 s" in text
    assert "note: replies look rate-limited" in text
    assert "stream 1: 105 sent, 78 received, 27 lost (25.700% loss)" in text
    assert text.count("  ping -q -i 0.02 -s 56 10.77.88.2 &") == 2
