"""What an http sample carries: the 0.1 recording layout, written and read
back only through ``HttpInterval`` / ``HttpParams``."""

from __future__ import annotations

import dataclasses
import json

from probetop.probes.core.sample import Sample
from probetop.probes.http import (
    METRICS,
    PHASES,
    TOTAL_MS,
    TTFB_MS,
    HttpInterval,
    HttpParams,
    HttpProbe,
    HttpSettings,
    Slowest,
    UrlInterval,
    phase_metric,
)

A, B = "127.0.0.1:8080/a", "127.0.0.1:8080/b?x=1"


def stamps(base: int) -> dict[str, int]:
    return {
        "namelookup": base,
        "connect": base + 100,
        "appconnect": 0,
        "pretransfer": base + 300,
        "starttransfer": base + 5000,
        "total": base + 6000,
    }


def interval_sample(*, include_errors: bool = False) -> Sample:
    """Three worker results in one interval, as the probe aggregates them."""
    probe = HttpProbe(
        HttpSettings(
            urls=(f"http://{A}", f"http://{B}"), interval_s=0.5, include_errors=include_errors
        )
    )
    probe.prepare()
    batch = [
        {"i": 1, "stamps_us": stamps(10), "http_code": 200, "error": None, "message": None},
        {"i": 0, "stamps_us": stamps(0), "http_code": 0, "error": "refused", "message": "x"},
        {"i": 1, "stamps_us": stamps(20), "http_code": 503, "error": None, "message": None},
    ]
    return probe._sample(batch, 123, 0.5)


# The layout probetop 0.1 wrote for that interval, key order included (the
# recording is JSON with keys in insertion order): URLs in the order of their
# first result, each URL's latest request, then per-URL counts, then URL-wide.
# Since errors stopped being latencies, the URL-wide medians and the
# every-request series leave the 503 out (None); --include-errors keeps it.
LAYOUT_0_1 = {
    f"dns_ms@{B}": 0.02,
    f"tcp_ms@{B}": 0.1,
    f"tls_ms@{B}": 0.0,
    f"server_ms@{B}": 4.7,
    f"transfer_ms@{B}": 1.0,
    f"ttfb_ms@{B}": 5.02,
    f"total_ms@{B}": 6.02,
    f"http_code@{B}": 503.0,
    f"dns_ms@{A}": 0.0,
    f"tcp_ms@{A}": None,
    f"tls_ms@{A}": None,
    f"server_ms@{A}": None,
    f"transfer_ms@{A}": None,
    f"ttfb_ms@{A}": None,
    f"total_ms@{A}": None,
    f"http_code@{A}": 0.0,
    f"requests@{B}": 2.0,
    f"errors@{B}": 1.0,
    f"requests@{A}": 1.0,
    f"errors@{A}": 1.0,
    "ttfb_ms": 5.01,
    "total_ms": 6.01,
    "requests": 3.0,
    "errors": 2.0,
}


def _run(classes: dict[str, int], outage_s: float) -> dict[str, object]:
    return {
        "classes": {"2xx_3xx": 0, "4xx": 0, "5xx": 0, "transport": 0, **classes},
        "discarded": 0,
        "skipped": 0,
        "jitter_mean_ms": None,
        "jitter_max_ms": None,
        "outage_s": outage_s,
    }


EXTRA_0_1 = {
    "errors": {A: {"refused": 1}, B: {"http_5xx": 1}},
    "ttfb_ms": {B: [5.01, None], A: [None]},
    "total_ms": {B: [6.01, None], A: [None]},
    # The run so far per URL (added with status classes; absent in 0.1 recordings);
    # each URL is down since its failed request was sent (6 ms before it ended).
    "run": {A: _run({"transport": 1}, 0.006), B: _run({"2xx_3xx": 1, "5xx": 1}, 0.00602)},
}


def test_sample_layout_is_the_recording_format_of_0_1():
    sample = interval_sample()
    assert json.dumps(sample.values) == json.dumps(LAYOUT_0_1)
    assert json.dumps(sample.extra) == json.dumps(EXTRA_0_1)
    declared = {m.name for m in METRICS}
    assert {key.partition("@")[0] for key in sample.values} == declared


def test_from_sample_reads_what_to_sample_wrote():
    sample = interval_sample()
    interval = HttpInterval.from_sample(sample)
    assert [u.label for u in interval.urls] == [B, A]
    b, a = interval.urls
    assert b.http_code == 503 and b.requests == 2 and b.errors == 1
    assert b.phases_ms == {"dns": 0.02, "tcp": 0.1, "tls": 0.0, "server": 4.7, "transfer": 1.0}
    # The 503 is the latest request (its own figures) but not a latency.
    assert b.every_ttfb_ms == (5.01, None) and b.ttfb_ms == 5.02
    assert a.http_code == 0 and a.ttfb_ms is None and a.phases_ms["tcp"] is None
    assert interval.ttfb_ms == 5.01 and interval.requests == 3 and interval.errors == 2
    assert interval.run[B].classes == {"2xx_3xx": 1, "4xx": 0, "5xx": 1, "transport": 0}
    assert interval.error_counts == {A: {"refused": 1}, B: {"http_5xx": 1}}
    again = interval.to_sample(sample.probe, sample.t_ns, sample.interval_s)
    assert json.dumps([again.values, again.extra]) == json.dumps([sample.values, sample.extra])


def test_include_errors_keeps_error_responses_in_the_series():
    interval = HttpInterval.from_sample(interval_sample(include_errors=True))
    b, _a = interval.urls
    assert b.every_ttfb_ms == (5.01, 5.02) and interval.ttfb_ms == 5.015


def test_from_sample_tolerates_an_old_or_partial_sample():
    # No per-request series in extra (older recordings): each URL's latest stands in.
    old = Sample("http", 1, 1.0, {f"ttfb_ms@{A}": 4.0, f"{phase_metric('dns')}@{A}": 1.0}, None)
    interval = HttpInterval.from_sample(old)
    (url,) = interval.urls
    assert url.every_ttfb_ms == (4.0,) and url.every_total_ms == (None,)
    assert url.http_code is None and url.phases_ms == {"dns": 1.0}
    # The URL-wide TTFB follows from the one URL's series: its latest, 4 ms.
    assert interval.ttfb_ms == 4.0 and interval.requests == 0 and interval.error_counts == {}
    junk = Sample("http", 1, 1.0, {TTFB_MS: "x"}, {"errors": [1], "ttfb_ms": "nope", "run": {A: 3}})  # type: ignore[dict-item]
    assert HttpInterval.from_sample(junk).ttfb_ms is None
    assert HttpInterval.from_sample(junk).run == {}


def test_url_wide_medians_are_the_slowest_urls_never_pooled():
    # A 20 ms URL and a 1 ms one: pooled, the median of the four requests
    # would read 10.5 ms, a time neither URL took.
    slow = UrlInterval("slow", every_ttfb_ms=(20.0, 22.0), every_total_ms=(21.0, 23.0))
    fast = UrlInterval("fast", every_ttfb_ms=(1.0, None, 1.0), every_total_ms=(1.5, None, 1.5))
    interval = HttpInterval(urls=(fast, slow), requests=5, errors=1)
    assert interval.slowest(TTFB_MS) == Slowest("slow", 21.0)
    assert interval.slowest(TOTAL_MS) == Slowest("slow", 22.0)
    assert interval.url_wide()[TTFB_MS] == 21.0 and interval.total_ms == 22.0
    sample = interval.to_sample("http", 1, 1.0)
    assert sample.values[TTFB_MS] == 21.0 and sample.values[TOTAL_MS] == 22.0
    # A recording made before this pooled the figure; reading derives it again.
    old = Sample("http", 1, 1.0, {**sample.values, TTFB_MS: 10.5}, sample.extra)
    assert HttpInterval.from_sample(old).slowest(TTFB_MS) == Slowest("slow", 21.0)
    # One URL: its own median, as before; no URL with a time: none.
    assert HttpInterval(urls=(fast,), requests=3, errors=1).ttfb_ms == 1.0
    failed = UrlInterval("down", every_ttfb_ms=(None,), every_total_ms=(None,))
    assert HttpInterval(urls=(failed,), requests=1, errors=1).slowest(TTFB_MS) is None


def test_params_round_trip_and_defaults():
    probe = HttpProbe(HttpSettings(urls=("http://u:pw@127.0.0.1:8080/a",), count=3, fresh=False))
    probe.prepare()
    params = probe.params()
    assert list(params) == [
        "urls",
        "labels",
        "interval_s",
        "count",
        "connection",
        "request",
        "warmup",
        "include_errors",
    ]
    assert "pw" not in json.dumps(params)
    typed = HttpParams.from_mapping(params)
    assert typed.labels == ("127.0.0.1:8080/a",) and typed.connection == "reuse"
    assert typed.count == 3 and typed.to_dict() == params
    assert HttpParams.from_mapping(None) == HttpParams()


def test_phases_are_declared_once():
    assert PHASES == ("dns", "tcp", "tls", "server", "transfer")
    assert [phase_metric(p) for p in PHASES] == [m.name for m in METRICS[2:7]]


def test_tls_facts_ride_in_extra_only_when_there_are_some():
    """``ssl`` (labels whose latest response came over TLS) and ``tls`` (a
    session looked up in the interval) are written only when there are some:
    an http:// run's samples keep the 0.1 layout (above)."""
    from probetop.probes.http.records import TlsFacts

    s = "https://127.0.0.1:8443/"
    facts = TlsFacts("TLSv1.3", "TLS_AES_128_GCM_SHA256", (1796042405, 1900000000))
    interval = HttpInterval(
        urls=(
            UrlInterval(label=s, http_code=200, requests=1, ssl=True),
            UrlInterval(label=A, http_code=200, requests=1),
        ),
        requests=2,
        errors=0,
        tls={s: facts},
    )
    sample = interval.to_sample("p", 1, 1.0)
    assert sample.extra["ssl"] == [s]
    assert sample.extra["tls"] == {
        s: {
            "version": "TLSv1.3",
            "cipher": "TLS_AES_128_GCM_SHA256",
            "not_after_s": [1796042405, 1900000000],
        }
    }
    recorded = dataclasses.replace(sample, extra=json.loads(json.dumps(sample.extra)))
    back = HttpInterval.from_sample(recorded)
    assert back.tls == {s: facts} and [u.ssl for u in back.urls] == [True, False]
    plain = HttpInterval(
        urls=(UrlInterval(label=A, http_code=200, requests=1),), requests=1, errors=0
    )
    assert {"ssl", "tls"}.isdisjoint(plain.to_sample("p", 1, 1.0).extra)
    odd = Sample("p", 1, 1.0, {}, {"ssl": "yes", "tls": {s: [1], A: {"not_after_s": ["x", 5]}}})
    assert HttpInterval.from_sample(odd).tls == {A: TlsFacts(None, None, (5,))}
