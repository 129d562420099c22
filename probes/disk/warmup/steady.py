"""Plateau (steady-state) detection with fio's criteria, plus leaving the plateau.

Feed one sample per interval (1 s, like fio's ``ss_interval`` default) with
``add``; it returns ``"reached"`` or ``"left"`` on a transition, else None.

Matches fio 3.x ``steadystate.c`` (see docs/steady-state.md):

- window: the last ``n = int(window_s / interval_s)`` samples (fio: ``ss_dur /
  ss_interval``); nothing is decided until the window is full.
- ``iops`` / ``bw``: the largest ``|sample - mean|`` in the window, in units or,
  with ``%``, as ``100 * dev / mean``; steady when it is ``< limit``.
- ``iops_slope`` / ``bw_slope``: least-squares slope of the window against the
  sample index 0..n-1 (fio assumes evenly spaced samples), in units per
  interval or, with ``%``, ``100 * slope / mean``; steady when ``|value| < limit``.
- ramp: samples that lie (mostly) before ``ramp_s`` are ignored (fio starts
  collecting one interval after ``ss_ramp``).
- Samples are truncated to integers and, for the slope percentages, the mean
  is ``floor(sum / n)``: fio stores rates as uint64 and divides integers there.
- With ``%`` and a window mean of 0 the value is undefined (fio divides by
  zero and never attains): a stalled device is not a plateau.

fio stops at the first "reached". probetop keeps measuring and reports
"left" when the criterion has failed on ``leave_after`` consecutive samples
(default: half a window), dated at the first failing sample, so one noisy
sample does not flap the state while a step change (which fails the criterion
for about a window) is caught. After leaving, the search starts again; every
episode is kept in ``episodes``; the ``reached_at_*``/``left_at_s`` attributes
describe the first plateau (the moment fio would have stopped).
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.base import UsageProbeError

CRITERIA = ("iops", "bw", "iops_slope", "bw_slope")
DEFAULT_SPEC = "iops_slope:0.01%"

VALID_FORMS = (
    "CRITERION:LIMIT or CRITERION:LIMIT% with CRITERION one of iops, bw, iops_slope, bw_slope "
    "(e.g. iops_slope:0.01% (the default), iops:5%, iops:20, bw:2%, bw_slope:1m); "
    "absolute bw limits are bytes/s with optional k/m/g/t (x1024) suffix"
)

_SIZE_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.I)


@dataclass(slots=True)
class Episode:
    """One stay on a plateau: when it was reached (seconds since start, bytes done
    by then) and when it was left (None while still on it)."""

    reached_at_s: float
    reached_at_bytes: int
    left_at_s: float | None = None
    mean: float = 0.0  # window mean of the criterion's metric when reached

    def as_dict(self) -> dict[str, Any]:
        return {
            "reached_at_s": self.reached_at_s,
            "reached_at_bytes": self.reached_at_bytes,
            "left_at_s": self.left_at_s,
            "mean": self.mean,
        }


def _parse_limit(text: str, criterion: str, spec: str) -> tuple[float, bool]:
    text = text.strip()
    percent = text.endswith("%")
    if percent:
        text = text[:-1].strip()
    try:
        if percent or criterion.startswith("iops"):
            value = float(text)
        else:  # bandwidth: bytes/s with fio's size suffixes (kb_base 1024)
            match = _SIZE_RE.match(text)
            if match is None:
                raise ValueError(text)
            value = float(match.group(1)) * _SIZE_SUFFIX[match.group(2).lower()]
    except ValueError:
        raise UsageProbeError(f"bad steady-state limit in {spec!r}: use {VALID_FORMS}") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageProbeError(
            f"steady-state limit in {spec!r} must be a positive number: use {VALID_FORMS}"
        )
    return value, percent


class SteadyState:
    """Rolling-window plateau detector. See the module docstring for semantics."""

    def __init__(
        self,
        criterion: str,
        limit: float,
        percent: bool,
        window_s: float,
        ramp_s: float = 0.0,
        interval_s: float = 1.0,
        leave_after: int | None = None,
    ) -> None:
        if criterion not in CRITERIA:
            raise UsageProbeError(
                f"unknown steady-state criterion {criterion!r}: use {VALID_FORMS}"
            )
        if interval_s <= 0:
            raise UsageProbeError("steady-state interval must be positive")
        self.criterion = criterion
        self.limit = float(limit)
        self.percent = percent
        self.window_s = float(window_s)
        self.ramp_s = float(ramp_s)
        self.interval_s = float(interval_s)
        # fio: intervals = ss_dur / ss_interval, integer division.
        self.window_n = int(self.window_s / self.interval_s + 1e-9)
        need = 2 if self.slope else 1
        if self.window_n < need:
            raise UsageProbeError(
                f"steady-state window {window_s:g} s holds {self.window_n} sample(s) of "
                f"{interval_s:g} s; {criterion} needs at least {need} (give a longer window)"
            )
        if self.ramp_s < 0:
            raise UsageProbeError("steady-state ramp must be >= 0 seconds")
        self.leave_after = max(1, leave_after if leave_after is not None else self.window_n // 2)
        self._window: deque[float] = deque(maxlen=self.window_n)
        self._prev_t = 0.0
        self._fail_run = 0
        self._fail_run_started: float | None = None
        self.episodes: list[Episode] = []
        self.value: float | None = None  # last computed criterion value (units or %)
        self.window_mean: float | None = None

    @classmethod
    def parse(
        cls, spec: str, window_s: float, ramp_s: float = 0.0, interval_s: float = 1.0
    ) -> SteadyState:
        """Build from fio's ``--steadystate`` syntax, e.g. ``iops_slope:0.01%``.

        fio requires the limit; so do we. Raises UsageProbeError with the valid forms.
        """
        name, sep, limit_text = (spec or "").partition(":")
        name = name.strip().lower()
        if not sep or name not in CRITERIA or not limit_text.strip():
            raise UsageProbeError(f"bad steady-state spec {spec!r}: use {VALID_FORMS}")
        limit, percent = _parse_limit(limit_text, name, spec)
        return cls(name, limit, percent, window_s, ramp_s, interval_s)

    # ------------------------------------------------------------------ properties

    @property
    def slope(self) -> bool:
        return self.criterion.endswith("_slope")

    @property
    def spec(self) -> str:
        return f"{self.criterion}:{self.limit:g}{'%' if self.percent else ''}"

    @property
    def reached_at_s(self) -> float | None:
        return self.episodes[0].reached_at_s if self.episodes else None

    @property
    def reached_at_bytes(self) -> int | None:
        return self.episodes[0].reached_at_bytes if self.episodes else None

    @property
    def left_at_s(self) -> float | None:
        return self.episodes[0].left_at_s if self.episodes else None

    @property
    def on_plateau(self) -> bool:
        return bool(self.episodes) and self.episodes[-1].left_at_s is None

    @property
    def state(self) -> str:
        """ "filling" (window not full yet), "searching", "steady" or "left"."""
        if self.on_plateau:
            return "steady"
        if self.episodes:
            return "left"
        return "filling" if len(self._window) < self.window_n else "searching"

    # ------------------------------------------------------------------ feeding

    def evaluate(self, window: list[float] | tuple[float, ...]) -> float | None:
        """The criterion value over a full window, as fio computes it; None when
        undefined (percent of a zero mean)."""
        n = len(window)
        sum_y = sum(window)
        if self.slope:
            # Least squares against x = 0..n-1: (sum_xy - sum_x*sum_y/n) / (sum_x2 - sum_x^2/n)
            sum_x = n * (n - 1) / 2
            sum_x2 = (n - 1) * n * (2 * n - 1) / 6
            sum_xy = sum(i * y for i, y in enumerate(window))
            raw = (sum_xy - sum_x * sum_y / n) / (sum_x2 - sum_x * sum_x / n)
            # fio divides its integer sum by n in integer arithmetic here (but not
            # for the deviation criteria): keep that so the percentages agree.
            mean = float(sum_y // n)
        else:
            mean = sum_y / n
            raw = max(abs(y - mean) for y in window)
        if self.percent:
            if mean == 0:
                return None
            return 100.0 * raw / mean
        return raw

    def _met(self, value: float | None) -> bool:
        if value is None:
            return False
        return abs(value) < self.limit if self.slope else value < self.limit

    def add(self, t_s: float, iops: float, bw_bytes: float, bytes_done: int) -> str | None:
        """Add the sample of the interval ending ``t_s`` seconds after the start.

        ``iops`` and ``bw_bytes`` are this interval's rates (not cumulative);
        ``bytes_done`` the total so far (reported with "reached"). Returns
        "reached" or "left" on a transition, else None.
        """
        dt = t_s - self._prev_t if t_s > self._prev_t else self.interval_s
        self._prev_t = t_s
        if self.ramp_s and (t_s - self.ramp_s) < 0.5 * dt:
            return None  # most of this interval lies in the ramp
        # fio keeps each interval's rate as an unsigned integer (truncated).
        value = iops if self.criterion.startswith("iops") else bw_bytes
        self._window.append(float(math.floor(max(0.0, value))))
        if len(self._window) < self.window_n:
            return None
        window = tuple(self._window)
        self.window_mean = sum(window) / len(window)
        self.value = self.evaluate(window)
        met = self._met(self.value)
        if not self.on_plateau:
            if met:
                self.episodes.append(Episode(t_s, int(bytes_done), None, self.window_mean))
                self._fail_run, self._fail_run_started = 0, None
                return "reached"
            return None
        if met:
            self._fail_run, self._fail_run_started = 0, None
            return None
        self._fail_run += 1
        if self._fail_run_started is None:
            self._fail_run_started = t_s
        if self._fail_run >= self.leave_after:
            self.episodes[-1].left_at_s = self._fail_run_started
            self._fail_run, self._fail_run_started = 0, None
            return "left"
        return None

    def as_dict(self) -> dict[str, Any]:
        """JSON for ``--json``: the first plateau (fio's moment) and every episode."""
        return {
            "criterion": self.spec,
            "window_s": self.window_s,
            "ramp_s": self.ramp_s,
            "reached_at_s": self.reached_at_s,
            "reached_at_bytes": self.reached_at_bytes,
            "left_at_s": self.left_at_s,
            "state": self.state,
            "value": self.value,
            "episodes": [e.as_dict() for e in self.episodes],
        }
