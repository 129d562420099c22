"""Status classes: the one split of HTTP outcomes every HTTP statistic uses.

Contract: ``classify(http_code, transport_error)`` puts one request's outcome
in exactly one ``StatusClass``. Latency percentiles are computed over
``SUCCESS`` by default (a fast 404 or an instant connection refusal must not
make a server look quick, see docs/http.md); the other classes are counted
and, when asked, get percentiles of their own.
"""

from __future__ import annotations

from enum import Enum


class StatusClass(str, Enum):
    """One request's outcome class. The values are the keys used in JSON,
    recordings and metric labels."""

    SUCCESS = "2xx_3xx"  # a response with status 100-399
    CLIENT_ERROR = "4xx"
    SERVER_ERROR = "5xx"
    TRANSPORT = "transport"  # no HTTP response: DNS, refused, reset, timeout, TLS...

    @property
    def is_error(self) -> bool:
        return self is not StatusClass.SUCCESS


#: Display order (pane, report, JSON).
STATUS_CLASSES: tuple[StatusClass, ...] = tuple(StatusClass)

#: How reports and panes name each status class.
CLASS_LABELS: dict[StatusClass, str] = {
    StatusClass.SUCCESS: "2xx/3xx",
    StatusClass.CLIENT_ERROR: "4xx",
    StatusClass.SERVER_ERROR: "5xx",
    StatusClass.TRANSPORT: "transport",
}

#: Above this share of error responses a run's latency figures get a loud marker.
ERROR_MARKER_SHARE = 0.01


def classify(http_code: int, transport_error: str | None = None) -> StatusClass:
    """The class of one outcome: a transport error (or no status at all) wins
    over any status code libcurl may have seen before the failure."""
    if transport_error or http_code <= 0:
        return StatusClass.TRANSPORT
    if http_code >= 500:
        return StatusClass.SERVER_ERROR
    if http_code >= 400:
        return StatusClass.CLIENT_ERROR
    return StatusClass.SUCCESS
