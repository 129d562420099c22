"""Warm-up job: plateau. fio's steady-state detection over a pass's intervals
(the detector itself is probes/disk/warmup/steady.py).

``PlateauWatch(settings)`` keeps one detector per pass (``restart()`` for the
next pass: a new pass is a new curve). ``add(...)`` feeds one interval and
returns the status line to show when the plateau is reached or left;
``detector()`` is what a sample records (the detector's JSON and state);
``summary()`` the first plateau, as the report and ``--json`` give it.
"""

from __future__ import annotations

from typing import Any

from probetop.probes.core.sample import StatusLevel
from probetop.probes.disk.warmup.settings import WarmupSettings
from probetop.probes.disk.warmup.steady import SteadyState


class PlateauWatch:
    """See the module docstring."""

    def __init__(self, settings: WarmupSettings) -> None:
        self._settings = settings
        self.steady: SteadyState = settings.steady_state()

    @property
    def spec(self) -> str:
        """The criterion in fio's spelling, normalised ("iops_slope:0.01%")."""
        return self.steady.spec

    def restart(self) -> None:
        self.steady = self._settings.steady_state()

    def add(
        self, elapsed_s: float, iops: float, bw_bytes: float, done: int
    ) -> tuple[StatusLevel, str] | None:
        event = self.steady.add(elapsed_s, iops, bw_bytes, done)
        if event == "reached":
            return (
                "info",
                f"plateau reached ({self.spec}) at {elapsed_s:.0f} s, after {done:,} bytes",
            )
        if event == "left":
            return "warning", f"left the plateau at {elapsed_s:.0f} s"
        return None

    def detector(self) -> tuple[dict[str, Any], str]:
        return self.steady.as_dict(), self.steady.state

    def summary(self) -> dict[str, Any]:
        return {
            "criterion": self.steady.spec,
            "reached_at_s": self.steady.reached_at_s,
            "reached_at_bytes": self.steady.reached_at_bytes,
            "left_at_s": self.steady.left_at_s,
        }
