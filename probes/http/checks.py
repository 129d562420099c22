"""``--assert`` on an HTTP (repeated mode) run, and how ``compare`` reads
its samples.

Contract: ``HttpFigures`` is the summary's figures per URL, typed (a value
the summary lacks is None); ``CHECKS`` (``core.checks.Checks``) declares each
assertable figure as a function of it. One probe may sample several URLs:
a latency is the worst URL's, a count the sum over URLs; with no URL every
figure is None. Latencies cover successful responses (2xx/3xx) unless the
run had --include-errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.checks import Assertable, Checks, assertable, dig, number
from probetop.probes.http.records import HTTP_CODE, REQUESTS
from probetop.probes.http.spec import KIND
from probetop.probes.http.status import STATUS_CLASSES

STATS = ("min", "p50", "p90", "p95", "p99", "max", "mean")
PHASES = ("dns", "tcp", "tls", "server", "transfer", "ttfb", "total")


@dataclass(frozen=True, slots=True)
class UrlFigures:
    """One URL's figures in an HTTP summary, typed."""

    phases_ms: Mapping[str, Mapping[str, float | None]]  # PHASES x STATS
    timed: Mapping[str, float | None]  # per phase: the responses its statistics cover
    requests: float | None
    errors: float  # every error kind added up (0 without any)
    classes: Mapping[str, float | None]  # STATUS_CLASSES' values
    jitter_mean_ms: float | None
    jitter_max_ms: float | None
    outage_s: float | None
    skipped_turns: float | None
    discarded: float | None

    @classmethod
    def from_summary(cls, u: Mapping[str, Any]) -> UrlFigures:
        errors = u.get("errors")
        return cls(
            phases_ms={
                phase: {stat: number(dig(u, "phases_ms", phase, stat)) for stat in STATS}
                for phase in PHASES
            },
            timed={phase: number(dig(u, "phases_ms", phase, "count")) for phase in PHASES},
            requests=number(u.get("requests")),
            errors=sum(number(v) or 0.0 for v in errors.values())
            if isinstance(errors, Mapping)
            else 0.0,
            classes={c.value: number(dig(u, "classes", c.value)) for c in STATUS_CLASSES},
            jitter_mean_ms=number(dig(u, "jitter_ms", "mean")),
            jitter_max_ms=number(dig(u, "jitter_ms", "max")),
            outage_s=number(dig(u, "outage", "seconds")),
            skipped_turns=number(u.get("skipped_turns")),
            discarded=number(u.get("discarded")),
        )


@dataclass(frozen=True, slots=True)
class HttpFigures:
    """An HTTP summary's figures: one ``UrlFigures`` per URL, in its order."""

    urls: tuple[UrlFigures, ...]

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> HttpFigures:
        urls = s.get("urls")
        if not isinstance(urls, Mapping):
            return cls(())
        return cls(
            tuple(UrlFigures.from_summary(u) for u in urls.values() if isinstance(u, Mapping))
        )

    def worst(self, figure: Callable[[UrlFigures], float | None]) -> float | None:
        """The largest URL's value; None when no URL has one."""
        values = [v for v in map(figure, self.urls) if v is not None]
        return max(values) if values else None

    def added(self, figure: Callable[[UrlFigures], float | None]) -> float | None:
        """The values added up over every URL (None without URLs)."""
        if not self.urls:
            return None
        return float(sum(figure(u) or 0.0 for u in self.urls))

    @property
    def requests(self) -> float | None:
        return self.added(lambda u: u.requests)

    @property
    def errors(self) -> float | None:
        if not self.urls:
            return None
        total = 0.0
        for u in self.urls:
            total += u.errors
        return total

    @property
    def error_rate_pct(self) -> float | None:
        requests, errors = self.requests, self.errors
        if not requests or errors is None:
            return None
        return 100.0 * errors / requests

    def fewest_timed(self, phase: str) -> float | None:
        """The fewest responses behind a URL's ``phase`` statistics, over the
        URLs that have them (what the worst URL's percentile may rest on);
        None when none has them or a count is unknown (an older recording)."""
        counts = [u.timed[phase] for u in self.urls if u.phases_ms[phase]["max"] is not None]
        if not counts or None in counts:
            return None
        return min(c for c in counts if c is not None)


def _latency(phase: str, stat: str, name: str, help: str) -> Assertable[HttpFigures]:
    return assertable(
        name,
        "ms",
        lambda s: s.worst(lambda u: u.phases_ms[phase][stat]),
        help,
        count=lambda s: s.fewest_timed(phase),
    )


CHECKS: Checks[HttpFigures] = Checks(
    kind=KIND,
    summary=HttpFigures.from_summary,
    assertables=(
        # http.p95: the whole request (total), the worst URL's
        *(_latency("total", stat, f"http.{stat}", f"total time {stat}") for stat in STATS),
        *(
            _latency(phase, stat, f"http.{phase}.{stat}", f"{phase} {stat}")
            for phase in PHASES
            for stat in STATS
        ),
        assertable("http.requests", "", lambda s: s.requests, "requests, all URLs"),
        assertable("http.errors", "", lambda s: s.errors, "failed requests, all URLs"),
        assertable(
            "http.error_rate",
            "%",
            lambda s: s.error_rate_pct,
            "errors / requests",
            count=lambda s: s.requests,
            share=True,
        ),
        *(
            assertable(
                f"http.class.{c.value}",
                "",
                lambda s, c=c.value: s.added(lambda u: u.classes[c]),
                f"requests with status class {c.value}, all URLs",
            )
            for c in STATUS_CLASSES
        ),
        assertable(
            "http.jitter",
            "ms",
            lambda s: s.worst(lambda u: u.jitter_mean_ms),
            "mean |total difference| of consecutive successes, worst URL",
        ),
        assertable(
            "http.jitter.max",
            "ms",
            lambda s: s.worst(lambda u: u.jitter_max_ms),
            "largest |total difference| of consecutive successes, worst URL",
        ),
        assertable(
            "http.outage",
            "s",
            lambda s: s.worst(lambda u: u.outage_s),
            "seconds with no successful response, worst URL",
        ),
        assertable(
            "http.skipped_turns",
            "",
            lambda s: s.added(lambda u: u.skipped_turns),
            "turns skipped: the previous request still running, all URLs",
        ),
        assertable(
            "http.discarded",
            "",
            lambda s: s.added(lambda u: u.discarded),
            "warm-up requests discarded (--warmup), all URLs",
        ),
    ),
    neutral=frozenset({HTTP_CODE, REQUESTS}),
    target_params=("urls", "labels"),
    entity_param="labels",
)
