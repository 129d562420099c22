"""Drift-free interval ticks for probes that sample on the event loop.

``Ticker`` sleeps until start + k x interval (not "interval after the last
wake-up"), so a late wake-up does not shift every later sample; each tick
returns the measured monotonic time, from which rates are computed, so a late
wake-up makes a longer interval, never a wrong rate. ``tick`` always
yields to the event loop, even when the deadline has already passed, so no
probe can hold the loop by overrunning its interval. Interval floors are
checked where the interval is chosen (``probes/core/ranges.py``).
"""

from __future__ import annotations

import asyncio

from probetop.probes.core.sample import now_ns


class Ticker:
    def __init__(self, interval_s: float, start_ns: int | None = None) -> None:
        """Deadlines at ``start_ns`` (default: now) + k x interval; a start
        in the past is where an earlier reading was taken (a passive probe's
        first, made with the probe), so the first tick ends its interval."""
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self.interval_ns = int(interval_s * 1e9)
        self._next = (now_ns() if start_ns is None else start_ns) + self.interval_ns

    async def tick(self) -> int:
        """Sleep until the next deadline; return now (monotonic ns)."""
        delay = (self._next - now_ns()) / 1e9
        # Always yield, even when late: a probe whose interval's work overran
        # must still let the loop run signals, the UI and other probes.
        await asyncio.sleep(max(0.0, delay))
        now = now_ns()
        # Skip deadlines already missed (e.g. after a suspend) instead of bursting.
        while self._next <= now:
            self._next += self.interval_ns
        return now
