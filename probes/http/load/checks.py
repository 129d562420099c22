"""``--assert`` on an HTTP load run (``http.load``: ``--rate`` /
``--connections``), and how ``compare`` reads its samples.

Contract: ``LoadFigures`` is the load summary's figures, typed (a value the
summary lacks is None); ``LOAD_CHECKS`` (``core.checks.Checks``) declares
each assertable figure as a function of it, under ``http.load.``: what a
wrk2 user gates on (Requests/sec, the latency distribution's p50, p90,
p99, p99.9 and max, errors, non-2xx/3xx responses). A statistic reads None
when what it is a statistic of is empty (the latencies with no 2xx/3xx
response, an error share or count with no finished request, the achieved
share with nothing scheduled), so an assertion on it fails instead of
passing on nothing. ``other_mode(metrics, load)`` says when an ``--assert``
names the other mode's figure (``http.p99`` on a load run), so the command
refuses it before the run (exit 2) rather than fail it after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.checks import Checks, assertable, dig, number
from probetop.probes.http.load.records import GEN_LAG_P99_MS, PCT_KEYS, TARGET_RPS
from probetop.probes.http.spec import LOAD_KIND
from probetop.probes.http.status import STATUS_CLASSES, StatusClass
from probetop.probes.http.transfer import PHASES

PHASE_STATS = (*PCT_KEYS, "mean")


@dataclass(frozen=True, slots=True)
class LoadFigures:
    """A load summary's figures (the ``--json`` document's probe), typed."""

    rate: float | None  # the target (None: a closed loop)
    scheduled: float | None
    sent: float | None
    done: float | None
    sent_rps: float | None
    done_rps: float | None
    classes: Mapping[str, float | None]  # count per status class
    corrected_ms: Mapping[str, float | None]  # 2xx/3xx, PCT_KEYS
    service_ms: Mapping[str, float | None]
    phases_ms: Mapping[str, Mapping[str, float | None]]  # PHASES x PHASE_STATS
    limited_intervals: float | None

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> LoadFigures:
        raw = s.get("classes")
        ok = StatusClass.SUCCESS.value
        return cls(
            rate=number(s.get("rate")),
            scheduled=number(s.get("scheduled")),
            sent=number(s.get("sent")),
            done=number(s.get("done")),
            sent_rps=number(s.get("sent_rps")),
            done_rps=number(s.get("done_rps")),
            # A class without requests is absent from the summary: 0 once
            # the run has its table of classes.
            classes={
                c.value: (number(dig(raw, c.value, "count")) or 0.0)
                if isinstance(raw, Mapping)
                else None
                for c in STATUS_CLASSES
            },
            corrected_ms={k: number(dig(raw, ok, "corrected_ms", k)) for k in PCT_KEYS},
            service_ms={k: number(dig(raw, ok, "service_ms", k)) for k in PCT_KEYS},
            phases_ms={
                p: {k: number(dig(s, "phases_ms", p, k)) for k in PHASE_STATS} for p in PHASES
            },
            limited_intervals=number(s.get("generator_limited_intervals")),
        )

    @property
    def successes(self) -> float | None:
        return self.classes[StatusClass.SUCCESS.value]

    @property
    def errors(self) -> float | None:
        counts = [self.classes[c.value] for c in STATUS_CLASSES if c.is_error]
        return None if None in counts else float(sum(n or 0.0 for n in counts))

    @property
    def non_2xx_3xx(self) -> float | None:
        fours = self.classes[StatusClass.CLIENT_ERROR.value]
        fives = self.classes[StatusClass.SERVER_ERROR.value]
        return None if fours is None or fives is None else fours + fives

    @property
    def error_rate_pct(self) -> float | None:
        errors = self.errors
        return None if errors is None or not self.done else 100.0 * errors / self.done

    @property
    def achieved_pct(self) -> float | None:
        if not self.rate or self.sent_rps is None:
            return None  # a closed loop has no target to achieve
        return 100.0 * self.sent_rps / self.rate


def _done(s: LoadFigures) -> float | None:
    return s.done


def _ok(s: LoadFigures) -> float | None:
    return s.successes


LOAD_CHECKS: Checks[LoadFigures] = Checks(
    kind=LOAD_KIND,
    summary=LoadFigures.from_summary,
    assertables=(
        assertable(
            "http.load.requests_per_second",
            "/s",
            lambda s: s.done_rps,
            "requests finished per second of the run (wrk's Requests/sec)",
            basis=_done,
        ),
        assertable(
            "http.load.sent_per_second",
            "/s",
            lambda s: s.sent_rps,
            "requests sent per second of the run (the achieved rate)",
            basis=lambda s: s.scheduled,
        ),
        assertable(
            "http.load.achieved",
            "%",
            lambda s: s.achieved_pct,
            "sent per second / the target (--rate)",
            basis=lambda s: s.scheduled,
        ),
        # wrk2's Latency Distribution: corrected, from the scheduled send time
        *(
            assertable(
                f"http.load.{k}",
                "ms",
                lambda s, k=k: s.corrected_ms[k],
                f"2xx/3xx latency {k}, from the scheduled send time (wrk2's)",
                basis=_ok,
            )
            for k in PCT_KEYS
        ),
        *(
            assertable(
                f"http.load.service.{k}",
                "ms",
                lambda s, k=k: s.service_ms[k],
                f"2xx/3xx service time {k}, from the actual send (wrk's)",
                basis=_ok,
            )
            for k in PCT_KEYS
        ),
        *(
            assertable(
                f"http.load.{phase}.{k}",
                "ms",
                lambda s, phase=phase, k=k: s.phases_ms[phase][k],
                f"2xx/3xx {phase} phase {k}",
                basis=_ok,
            )
            for phase in PHASES
            for k in PHASE_STATS
        ),
        assertable("http.load.requests", "", _done, "requests finished"),
        assertable(
            "http.load.errors",
            "",
            lambda s: s.errors,
            "requests that ended 4xx, 5xx or in a transport error",
            basis=_done,
        ),
        assertable(
            "http.load.error_rate",
            "%",
            lambda s: s.error_rate_pct,
            "errors / requests finished",
            basis=_done,
            share=True,
        ),
        assertable(
            "http.load.non_2xx_3xx",
            "",
            lambda s: s.non_2xx_3xx,
            "4xx and 5xx responses (wrk's Non-2xx or 3xx responses)",
            basis=_done,
        ),
        *(
            assertable(
                f"http.load.class.{c.value}",
                "",
                lambda s, c=c.value: s.classes[c],
                f"requests with status class {c.value}",
                basis=_done,
            )
            for c in STATUS_CLASSES
        ),
        assertable(
            "http.load.generator_limited",
            "",
            lambda s: s.limited_intervals,
            "intervals probetop's generator, not the server, limited",
            basis=lambda s: s.scheduled,
        ),
    ),
    # The target is a setting, the lag the generator's own: neither is the server's.
    neutral=frozenset({TARGET_RPS, GEN_LAG_P99_MS}),
    target_params=("url", "label"),
)


def other_mode(metrics: Iterable[str], load: bool) -> str | None:
    """Why the first of ``metrics`` is the other mode's figure, or None.
    ``probetop http`` runs one mode; its ``http.*`` figures are repeated
    mode's, its ``http.load.*`` figures load mode's."""
    for metric in metrics:
        if not metric.startswith("http."):
            continue
        if metric.startswith("http.load.") and not load:
            return (
                f"--assert {metric} is a load mode figure: add --rate R or --connections N, "
                "or assert repeated mode's http.* figures (http.p99, http.error_rate ...)"
            )
        if load and not metric.startswith("http.load."):
            return (
                f"--assert {metric} is a repeated mode figure; with --rate or --connections "
                "assert load mode's: http.load.p99, http.load.requests_per_second, "
                "http.load.error_rate ... (docs/http-load.md)"
            )
    return None
