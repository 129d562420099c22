"""Load mode's options and settings: ``probetop http URL --rate R
[--connections C] [--time S]`` (open model, wrk2's), or ``--connections C``
without ``--rate`` (closed loop, wrk's).

Contract:
- ``LOAD_OPTIONS`` are spliced into the http ``SPEC`` (one declaration for
  the CLI, the prompt and the docs test; documented in docs/http-load.md).
- ``load_from_options(values, time_s=...)`` gives ``LoadSettings`` when
  ``--rate`` or ``--connections`` is given (``rate`` None: closed loop),
  None otherwise; it raises ``UsageProbeError`` (exit 2,
  the message names the option) for a rate or connection count out of range
  and for options that do not go with load mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import Option, number, whole_number

LOAD = "load mode (probetop; docs/http-load.md)"

#: The highest --rate accepted. One generator process sends about 20,000
#: requests/s to a loopback nginx on a 2-core machine (docs/http-load.md);
#: the cap keeps the schedule's arithmetic and a typo (a rate of 1e9) sane;
#: below it the generator-limited warning says when the rate is not kept.
MAX_RATE = 100_000.0
MIN_RATE = 1e-6
"""One request in about 11.6 days; below, the schedule's nanosecond arithmetic
overflowed (--rate 1e-300: the worker failed on a NaN)."""
#: The most --connections: each is a libcurl handle and a socket.
MAX_CONNECTIONS = 10_000
#: wrk's and wrk2's default.
DEFAULT_CONNECTIONS = 10
#: How long a headless load run lasts without --time: wrk's default (-d 10s).
#: --time 0 runs until stopped; so does --watch without --time (a dashboard).
DEFAULT_TIME_S = 10.0
#: How long requests still in flight get after the schedule ends (--time).
DRAIN_S = 1.0


def connection_cost() -> Any:
    """One connection: a libcurl easy handle with its buffers, and one socket
    (core.machine loads only in load mode: a one-off request does not pay for it)."""
    from probetop.probes.core.machine import UnitCost

    return UnitCost(
        "connection",
        tasks=0,
        files=1,
        resident_bytes=200_000,
        detail="a libcurl handle and its buffers",
    )


LOAD_OPTIONS: tuple[Option, ...] = (
    Option(
        ("--rate",),
        "load mode: send R requests/s on a fixed schedule (open model, latency from "
        f"each scheduled send time); {MIN_RATE:g} <= R <= {MAX_RATE:,.0f}",
        number(positive=True),
        metavar="R",
        group=LOAD,
    ),
    Option(
        ("--connections",),
        f"load mode: at most C requests in flight, one connection each "
        f"(default {DEFAULT_CONNECTIONS}; 1..{MAX_CONNECTIONS}); without --rate a closed "
        "loop: each connection sends its next request when the last one is done (wrk -c C); "
        f"load mode runs --time S (default {DEFAULT_TIME_S:g} s, as wrk's -d; 0: until stopped)",
        whole_number(),
        metavar="C",
        group=LOAD,
    ),
)


@dataclass(frozen=True, slots=True)
class LoadSettings:
    """One load run: ``rate`` requests/s (None: a closed loop, each connection
    sending again as soon as its response is in, as wrk), at most
    ``connections`` in flight, for ``time_s`` seconds (None: until stopped),
    reported every ``interval_s``; ``fresh`` opens a new connection per
    request (default: keep-alive, as wrk and a browser)."""

    rate: float | None
    connections: int = DEFAULT_CONNECTIONS
    time_s: float | None = None
    interval_s: float = 1.0
    fresh: bool = False

    @property
    def connection(self) -> str:
        return "fresh" if self.fresh else "reuse"

    def validate(self) -> None:
        if self.rate is not None and not (MIN_RATE <= self.rate <= MAX_RATE):
            raise UsageProbeError(
                f"--rate must be at least {MIN_RATE:g} and at most {MAX_RATE:,.0f} requests/s, "
                f"got {self.rate:g}"
            )
        if not (1 <= self.connections <= MAX_CONNECTIONS):
            raise UsageProbeError(
                f"--connections must be within 1..{MAX_CONNECTIONS}, got {self.connections}"
            )
        from probetop.probes.core.machine import check_capacity

        check_capacity("--connections", self.connections, connection_cost())


# Options of repeated or one-off mode that load mode has no use for, and why.
_NOT_WITH_RATE: tuple[tuple[str, str, str], ...] = (
    ("count", "--count", "load mode runs for --time S (or until Ctrl-C), not a request count"),
    ("reuse", "--reuse", "load mode keeps connections alive already (--fresh for one per request)"),
)


def _load_time(time_s: float | None, *, watch: bool) -> float | None:
    """--time; absent, wrk's 10 s headless (a dashboard runs until stopped);
    0 (or absent with --watch): None, until stopped."""
    if time_s is None:
        return None if watch else DEFAULT_TIME_S
    return time_s or None


def load_from_options(
    values: Mapping[str, Any], *, time_s: float | None, interval_s: float = 1.0
) -> LoadSettings | None:
    """Load settings when ``--rate`` or ``--connections`` is given (None
    otherwise), validated; ``--connections`` alone is the closed loop."""
    rate = values.get("rate")
    connections = values.get("connections")
    if rate is None and connections is None:
        return None
    flag_of_mode = "--rate" if rate is not None else "--connections"
    for name, flag, why in _NOT_WITH_RATE:
        given = values.get(name)
        if given is not None and given is not False:
            raise UsageProbeError(f"{flag} does not go with {flag_of_mode}: {why}")
    urls = values.get("urls") or ()
    if len(urls) != 1:
        raise UsageProbeError(
            f"{flag_of_mode} takes exactly one URL (got {len(urls)}): run one probetop per URL"
        )
    settings = LoadSettings(
        rate=None if rate is None else float(rate),
        connections=DEFAULT_CONNECTIONS if connections is None else int(connections),
        time_s=_load_time(time_s, watch=bool(values.get("watch", False))),
        interval_s=float(interval_s),
        fresh=bool(values.get("fresh", False)),
    )
    settings.validate()
    return settings
