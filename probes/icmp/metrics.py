"""ICMP metrics: smokeping_prober's ``smokeping_*`` series under its names
and labels, blackbox_exporter's ``probe_success``,
``probe_icmp_duration_seconds`` and ``probe_icmp_reply_hop_limit``,
probetop's loss and ordering counters.

Contract: ``IcmpTracker`` reads samples only through ``IcmpInterval``
and params through ``IcmpParams``; counters never go backwards; the RTT
histogram's counts are exact (``ICMP_BUCKETS_NS``).

Names, types, labels and help texts follow smokeping_prober (collector.go
and main.go at commit 234d0bf3de8b0df4293549ccb366c179670ea433,
2026-04-01: 0.11.0 and two commits): ``smokeping_requests_total``,
``smokeping_response_duration_seconds`` (histogram),
``smokeping_response_ttl`` (gauge: the last reply's TTL; 0 until the first
reply, as smokeping's ``updateProbes`` creates it at 0),
``smokeping_response_duplicates_total``, ``smokeping_send_errors_total``,
``smokeping_receive_errors_total`` (apart: smokeping counts them apart) and
``smokeping_prober_errors_total`` (main.go, commit cd52183: pingers whose
``Run`` returned an error; here ICMP probes that ended failed or crashed).
Every one is there from the start, at 0, as smokeping's are. The
``smokeping_*`` series carry smokeping's labels and no others: ``ip``,
``host``, ``source`` (the ``--source`` address, empty when none, as
smokeping's) and ``tos`` (always 0: probetop sends the default ToS); the
receive- and prober-error counters none (smokeping's are one per process).
Two probes of one host and source are one smokeping series, as one smokeping
target is: ``MetricsState.points`` sums their counters and histograms (the
TTL gauge is the last probe's). The histogram's bounds are smokeping's
``--buckets`` default. probetop's own series and blackbox_exporter's
(``probe_*``, ``probetop_icmp_*``) add ``probe``, the probe id;
``probe_icmp_reply_hop_limit`` follows blackbox_exporter's prober/icmp.go
(commit e39d7d415684f31b907dce55201a435fe2c2cf0d): served once a reply's
hop limit is known, as blackbox registers it only then.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Point, metric_def
from probetop.probes.core.sample import Sample, Status
from probetop.probes.core.tracker import (
    SUCCESS_HELP,
    BucketCounter,
    Tracker,
    by_metric,
    events_in,
)
from probetop.probes.icmp.records import KIND, IcmpInterval
from probetop.probes.icmp.summary import IcmpParams

ICMP_BUCKETS_S: tuple[float, ...] = tuple(5e-05 * 2**k for k in range(20))
"""smokeping_prober's default ``--buckets`` (main.go: ExponentialBuckets(5e-05,
2, 20)): 50 µs to 26.2 s. The probe's own histogram (``IcmpInterval.rtt_hist``)
has four buckets per power of two of nanoseconds; one that straddles a bound
is counted under the bound above it (every value in it is below that), so a
cumulative count can miss at most that one quarter-octave bucket's replies.
Doubling is exact in binary floating point: these are Go's float64 bounds."""
ICMP_BUCKETS_NS: tuple[int, ...] = tuple(round(s * 1e9) for s in ICMP_BUCKETS_S)

SMOKEPING_LABELS = ("ip", "host", "source", "tos")  # collector.go's base labels, its order
_ICMP_LABELS = (*SMOKEPING_LABELS, "probe")
TOS = "0"  # probetop sends the kernel's default ToS / traffic class

ICMP_SUCCESS = metric_def("probe_success", "gauge", "", SUCCESS_HELP, _ICMP_LABELS)
ICMP_PHASE = metric_def(
    "probe_icmp_duration_seconds",
    "gauge",
    "seconds",
    'round-trip time by phase; phase="rtt": the mean RTT of the latest interval with '
    "replies (resolve and setup happen once, before the first request, and are not timed)",
    (*_ICMP_LABELS, "phase"),
)
ICMP_REQUESTS = metric_def(
    "smokeping_requests",
    "counter",
    "",
    "echo requests sent",
    SMOKEPING_LABELS,
)
ICMP_RTT = metric_def(
    "smokeping_response_duration_seconds",
    "histogram",
    "seconds",
    "round-trip time of every echo reply (bounds: smokeping_prober's default, 50 us to 26.2 s)",
    SMOKEPING_LABELS,
)
ICMP_DUPLICATES = metric_def(
    "smokeping_response_duplicates",
    "counter",
    "",
    "extra replies to a request already answered",
    SMOKEPING_LABELS,
)
ICMP_TTL = metric_def(
    "smokeping_response_ttl",
    "gauge",
    "",
    "IP TTL / hop limit of the latest echo reply",
    SMOKEPING_LABELS,
)
ICMP_SEND_ERRORS = metric_def(
    "smokeping_send_errors",
    "counter",
    "",
    "local errors sending a request (sendto's errno)",
    SMOKEPING_LABELS,
)
ICMP_RECV_ERRORS = metric_def(
    "smokeping_receive_errors",
    "counter",
    "",
    "local errors receiving (recvmsg's errno; no reply is an error here)",
    (),  # smokeping's is one per process: MetricsState.points sums the probes'
)
ICMP_PROBER_ERRORS = metric_def(
    "smokeping_prober_errors",
    "counter",
    "",
    "ICMP probes that ended with an error (failed or crashed), as smokeping's pingers "
    "whose Run returned one",
    (),  # smokeping's is one per process: MetricsState.points sums the probes'
)
ICMP_HOP_LIMIT = metric_def(
    "probe_icmp_reply_hop_limit",
    "gauge",
    "",
    "replied packet hop limit (TTL for IPv4) of the latest echo reply (blackbox_exporter's; "
    "absent before the first reply)",
    _ICMP_LABELS,
)
ICMP_LOST = metric_def(
    "probetop_icmp_lost",
    "counter",
    "",
    "requests unanswered for longer than the grace period",
    _ICMP_LABELS,
)
ICMP_LOSS = metric_def(
    "probetop_icmp_loss_ratio",
    "gauge",
    "ratio",
    "lost / (lost + received) over the requests resolved in the latest interval that resolved any",
    _ICMP_LABELS,
)
ICMP_REORDERED = metric_def(
    "probetop_icmp_reordered",
    "counter",
    "",
    "replies that arrived after a reply to a later request",
    _ICMP_LABELS,
)
ICMP_LATE = metric_def(
    "probetop_icmp_late",
    "counter",
    "",
    "replies that arrived after their request was counted lost",
    _ICMP_LABELS,
)
ICMP_ERRORS = metric_def(
    "probetop_icmp_error_replies",
    "counter",
    "",
    "ICMP errors about our requests (unreachable, time exceeded)",
    _ICMP_LABELS,
)


class IcmpTracker(Tracker):
    KIND = KIND
    COMMAND = "icmp"
    DEFS = (
        ICMP_SUCCESS,
        ICMP_PHASE,
        ICMP_HOP_LIMIT,
        ICMP_REQUESTS,
        ICMP_RTT,
        ICMP_TTL,
        ICMP_DUPLICATES,
        ICMP_SEND_ERRORS,
        ICMP_RECV_ERRORS,
        ICMP_PROBER_ERRORS,
        ICMP_LOST,
        ICMP_LOSS,
        ICMP_REORDERED,
        ICMP_LATE,
        ICMP_ERRORS,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.host = ""
        self.ip = ""
        self.success: float | None = None
        self.rtt_s: float | None = None
        self.loss: float | None = None
        self.counts = {
            m.name: 0
            for m in (
                ICMP_REQUESTS,
                ICMP_DUPLICATES,
                ICMP_SEND_ERRORS,
                ICMP_RECV_ERRORS,
                ICMP_PROBER_ERRORS,
                ICMP_LOST,
                ICMP_REORDERED,
                ICMP_LATE,
                ICMP_ERRORS,
            )
        }
        self.source = ""
        self.ttl: int | None = None
        self.rtt = BucketCounter(ICMP_BUCKETS_S)
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = IcmpParams.from_params(info.get("params"))
        self.host = params.settings.host
        self.source = params.settings.source or ""
        if params.target is not None:
            self.ip = params.target.address

    def observe(self, sample: Sample) -> None:
        iv = IcmpInterval.from_sample(sample)
        self.counts[ICMP_REQUESTS.name] += events_in(iv.requests_per_s, sample.interval_s)
        # The sample's send_errors holds both sides; its errors name each errno.
        receive = sum(n for name, n in iv.errors.items() if name.startswith("receive "))
        for metric, n in (
            (ICMP_DUPLICATES, iv.duplicates),
            (ICMP_SEND_ERRORS, None if iv.send_errors is None else iv.send_errors - receive),
            (ICMP_RECV_ERRORS, receive),
            (ICMP_LOST, iv.lost),
            (ICMP_REORDERED, iv.reordered),
            (ICMP_LATE, iv.late),
            (ICMP_ERRORS, iv.icmp_errors),
        ):
            self.counts[metric.name] += max(0, n or 0)
        replies = 0
        if iv.rtt_hist:
            for bucket in iv.rtt_hist:
                n = max(0, round(bucket.count))
                # [low, high) µs: every value < high <= le of the slot found
                # (a bucket straddling a bound goes to the bound above it).
                slot = bisect.bisect_left(ICMP_BUCKETS_NS, round(bucket.high_us * 1e3))
                self.rtt.add_to(slot, n, 0.0)
                replies += n
            if iv.rtt.avg_us is not None:
                self.rtt.sum += iv.rtt.avg_us / 1e6 * replies
        else:
            replies = events_in(iv.replies_per_s, sample.interval_s)
        # An interval in which no request was resolved (ping -i 2 sampled
        # each second) says nothing: the gauges keep the last answer.
        if replies > 0 or (iv.lost or 0) > 0:
            self.success = 1.0 if replies > 0 else 0.0
        if iv.rtt.avg_us is not None:
            self.rtt_s = iv.rtt.avg_us / 1e6
        if iv.loss_pct is not None:
            self.loss = iv.loss_pct / 100.0
        if iv.ttl is not None:
            self.ttl = iv.ttl

    def status(self, record: Status) -> bool:
        # smokeping counts a pinger whose Run returned an error; the hub
        # stops a probe that raised with reason "failed" or "crashed".
        if record.level == "stopped" and record.message in ("failed", "crashed"):
            self.counts[ICMP_PROBER_ERRORS.name] += 1
            return True
        return False

    def points(self) -> list[Point]:
        smokeping = (self.ip, self.host, self.source, TOS)
        labels = (*smokeping, self.probe_id)
        out: list[Point] = []
        if self.success is not None:
            out.append(Point(ICMP_SUCCESS, labels, self.success))
        if self.rtt_s is not None:
            out.append(Point(ICMP_PHASE, (*labels, "rtt"), self.rtt_s))
        if self.ttl is not None:
            out.append(Point(ICMP_HOP_LIMIT, labels, float(self.ttl)))
        out.append(Point(ICMP_RTT, smokeping, self.rtt.snapshot()))
        # smokeping creates the TTL gauge at 0 with the target (updateProbes).
        out.append(Point(ICMP_TTL, smokeping, float(self.ttl or 0)))
        if self.loss is not None:
            out.append(Point(ICMP_LOSS, labels, self.loss))
        for metric in self.DEFS:
            if metric.name in self.counts:
                own = labels[: len(metric.labels)]  # smokeping's: its base labels or none
                out.append(Point(metric, own, float(self.counts[metric.name])))
        return by_metric(out, self.DEFS)


TRACKER = IcmpTracker
