"""curl 7.88's --retry for one-off transfers: which failures are retried,
how long to wait, and the warning it prints (tool_operate.c,
post_per_transfer).

Contract: ``RetryPolicy.reason(exchange, code, fail=...)`` is curl's retry
class of a finished attempt (``": timeout"``, ``": connection refused"``,
``": HTTP error"``, ``"(retrying all errors)"``) or None: not retried.
``RetryPolicy.next_wait_ms(exchange, reason)`` is the wait before the next
attempt, and ``warning`` curl's line about it. A ``Retries`` counts one
URL's attempts down and keeps curl's doubling wait (1 s, 2 s, 4 s ... at
most 10 minutes, unless --retry-delay fixes it).
"""

from __future__ import annotations

import errno
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probetop.probes.http.transfer import Exchange

#: curl's RETRY_SLEEP_DEFAULT and RETRY_SLEEP_MAX (ms)
FIRST_WAIT_MS = 1000
MAX_WAIT_MS = 10 * 60 * 1000
#: HTTP statuses curl counts as transient ("HTTP error")
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: libcurl's errors curl counts as a timeout: 28 OPERATION_TIMEDOUT, 6
#: COULDNT_RESOLVE_HOST, 5 COULDNT_RESOLVE_PROXY (12 FTP_ACCEPT_TIMEOUT: no FTP here)
TIMEOUT_CODES = frozenset({28, 6, 5})
COULDNT_CONNECT = 7
HTTP_RETURNED_ERROR = 22


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """curl's --retry N, --retry-delay S, --retry-max-time S,
    --retry-connrefused and --retry-all-errors (0: none)."""

    count: int = 0
    delay_s: int = 0
    max_time_s: int = 0
    connrefused: bool = False
    all_errors: bool = False

    def reason(self, exchange: Exchange, code: int, *, fail: bool) -> str | None:
        """Why curl would retry this attempt (its words), or None."""
        if code in TIMEOUT_CODES:
            return ": timeout"
        final = exchange.final if exchange.hops else None
        oserrno = final.info.get("os_errno") if final is not None else None
        if code == COULDNT_CONNECT and self.connrefused and oserrno == errno.ECONNREFUSED:
            return ": connection refused"
        answered = code == 0 or (fail and code == HTTP_RETURNED_ERROR)
        if answered and final is not None and final.http_code in TRANSIENT_STATUSES:
            return ": HTTP error"
        if code and self.all_errors:
            return "(retrying all errors)"
        return None

    def retry_after_ms(self, exchange: Exchange) -> int:
        """The final response's Retry-After as ms (seconds, or an HTTP date
        from now, as libcurl reads it); 0 when absent or unreadable."""
        if not exchange.hops:
            return 0
        value = next(
            (v for k, v in exchange.final.headers if k.lower() == "retry-after"), ""
        ).strip()
        if value.isdigit():
            return int(value) * 1000
        import email.utils  # an HTTP date only: 20 ms of imports off every one-off start

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return 0
        return max(0, int((when.timestamp() - time.time()) * 1000))


class Retries:
    """One URL's attempts: what is left, the wait, and curl's warning."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.left = policy.count
        self.wait_ms = policy.delay_s * 1000 if policy.delay_s else FIRST_WAIT_MS
        self.started = time.monotonic()

    def next_wait_ms(self, exchange: Exchange, reason: str) -> int | None:
        """The wait before another attempt, or None: none left, or past
        --retry-max-time since the first attempt began."""
        if self.left <= 0:
            return None
        limit_ms = self.policy.max_time_s * 1000
        spent_ms = (time.monotonic() - self.started) * 1000
        if limit_ms and spent_ms >= limit_ms:
            return None
        wait = self.wait_ms
        if reason == ": HTTP error":
            after = self.policy.retry_after_ms(exchange)
            if after:
                wait = after if not limit_ms else min(after, int(limit_ms - spent_ms))
        return wait

    def warning(self, reason: str, wait_ms: int) -> str:
        """curl's line, then one attempt fewer and the next default wait doubled."""
        line = (
            f"Problem {reason}. Will retry in {wait_ms // 1000} seconds. {self.left} retries left."
        )
        self.left -= 1
        if not self.policy.delay_s:
            self.wait_ms = min(self.wait_ms * 2, MAX_WAIT_MS)
        return line
