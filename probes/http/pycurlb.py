"""One HTTP exchange as pycurlb's JSON document, with probetop's own fields.

Contract: ``pycurlb_document(exchange)`` gives every key pycurlb 0.2.2 prints
(``PYCURLB_KEYS``, in its order) with pycurlb's meaning and type, then
probetop's fields under ``PROBETOP_KEY``; redacted. curl's summed figures
(like curl -L) are rebuilt from the hops' own numbers.
"""

from __future__ import annotations

from typing import Any

from probetop.probes.http.curlinfo import STAMPS
from probetop.probes.http.transfer import Exchange, phases_us
from probetop.probes.record import redact

#: Every key pycurlb 0.2.2 prints (its JSON dict of pycurl getinfo values and
#: its own four), in its order (sorted). ``pycurlb_document`` gives each with
#: pycurlb's type; tests/http/data/pycurlb-0.2.2.json is a real run's output.
PYCURLB_KEYS = (
    "appconnect_time",
    "compressed",
    "condition_unmet",
    "connect_time",
    "connect_timeout",
    "content_length_download",
    "content_length_upload",
    "content_type",
    "effective_url",
    "ftp_entry_path",
    "header_size",
    "http_code",
    "http_connectcode",
    "httpauth_avail",
    "local_ip",
    "local_port",
    "max_time",
    "method",
    "namelookup_time",
    "num_connects",
    "os_errno",
    "pretransfer_time",
    "primary_ip",
    "primary_port",
    "proxy_ssl_verifyresult",
    "proxyauth_avail",
    "redirect_count",
    "redirect_time",
    "redirect_url",
    "request_size",
    "scheme",
    "size_download",
    "size_upload",
    "speed_download",
    "speed_upload",
    "ssl_engines",
    "ssl_verifyresult",
    "starttransfer_time",
    "total_time",
)
#: The key that holds probetop's own fields, beside pycurlb's.
PROBETOP_KEY = "probetop"
#: libcurl's default connect timeout (s), what pycurlb reports when none is set.
LIBCURL_CONNECT_TIMEOUT_S = 300

_FLOAT_KEYS = ("size_download", "size_upload", "speed_download", "speed_upload")
_FINAL_KEYS = (
    "http_code",
    "effective_url",
    "primary_ip",
    "primary_port",
    "local_ip",
    "local_port",
    "request_size",
    "content_type",
    "ssl_verifyresult",
    "os_errno",
    "method",
    "content_length_download",
    "content_length_upload",
    "http_connectcode",
    "httpauth_avail",
    "proxyauth_avail",
    "proxy_ssl_verifyresult",
    "condition_unmet",
    "ssl_engines",
    "ftp_entry_path",
    "scheme",
)


def _whole(seconds: float) -> int | float:
    """A timeout as pycurlb prints it: an int when whole (its default types)."""
    return int(seconds) if float(seconds).is_integer() else float(seconds)


def pycurlb_document(exchange: Exchange) -> dict[str, Any]:
    """One JSON document: pycurlb's keys (``PYCURLB_KEYS``, sorted as pycurlb
    prints them) with pycurlb's meanings and types, then probetop's own
    fields under ``"probetop"``; redacted.

    Like curl -L, the top-level ``*_time`` values add up every hop's stamps
    and ``redirect_time`` is the time of all hops before the last;
    ``num_connects`` and ``header_size`` add up every hop's; every other
    pycurlb key is the final hop's. ``compressed``, ``connect_timeout`` and
    ``max_time`` are the request's options, as pycurlb reports them (libcurl's
    defaults 300 and 0, no limit, when not given). ``probetop.redirects`` has
    each hop's own figures.
    """
    final = exchange.final
    request = exchange.request
    summed = {s: sum(h.stamps_us.get(s, 0) for h in exchange.hops) for s in STAMPS}
    doc: dict[str, Any] = {f"{s}_time": summed[s] / 1e6 for s in STAMPS}
    doc["redirect_time"] = sum(h.stamps_us.get("total", 0) for h in exchange.hops[:-1]) / 1e6
    doc["redirect_count"] = len(exchange.hops) - 1
    for key in _FINAL_KEYS:
        doc[key] = final.info.get(key)
    for key in _FLOAT_KEYS:
        doc[key] = float(final.info.get(key) or 0)
    doc["num_connects"] = sum(int(h.info.get("num_connects") or 0) for h in exchange.hops)
    doc["header_size"] = sum(int(h.info.get("header_size") or 0) for h in exchange.hops)
    doc["redirect_url"] = final.redirect_url
    doc["compressed"] = bool(request.compressed)
    connect = request.connect_timeout_s
    doc["connect_timeout"] = _whole(LIBCURL_CONNECT_TIMEOUT_S if connect is None else connect)
    doc["max_time"] = _whole(request.timeout_s or 0)
    if not isinstance(doc["ssl_engines"], list):
        doc["ssl_engines"] = []
    for key in ("content_length_download", "content_length_upload"):
        if not isinstance(doc[key], float):
            doc[key] = -1.0
    for key in ("http_connectcode", "httpauth_avail", "proxyauth_avail"):
        doc[key] = int(doc[key] or 0)
    for key in ("proxy_ssl_verifyresult", "condition_unmet"):
        doc[key] = int(doc[key] or 0)
    out: dict[str, Any] = {key: doc[key] for key in PYCURLB_KEYS}
    tls = next((h.tls for h in reversed(exchange.hops) if h.tls), None)
    out[PROBETOP_KEY] = {
        "phases_us": phases_us(summed, failed=exchange.error, got_response=final.http_code > 0),
        "http_version": final.http_version,
        "status_line": final.status_line,
        "tls": tls.as_dict() if tls else None,
        "redirects": [
            {
                "url": h.url,
                "method": h.method,
                "http_code": h.http_code,
                "status_line": h.status_line,
                "http_version": h.http_version,
                "primary_ip": h.info.get("primary_ip"),
                "primary_port": h.info.get("primary_port"),
                "num_connects": h.info.get("num_connects"),
                "stamps_us": dict(h.stamps_us),
                "phases_us": h.phases_us,
                "error": h.error,
            }
            for h in exchange.hops
        ],
        "error": exchange.error,
        "error_message": exchange.message(fail=True),
        "request": request.redacted(),
        "url": exchange.url,
    }
    return redact(out)
