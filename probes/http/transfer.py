"""One HTTP exchange through libcurl, hop by hop, and what its numbers mean.

Contract:
- Every time comes from libcurl's ``*_TIME_T`` integer-microsecond counters,
  which are cumulative from the start of the hop (``stamps_us``). Phases are
  httpstat's, except TLS (appconnect - connect, as reference.md says):
  DNS = namelookup, TCP = connect - namelookup, TLS = appconnect - connect,
  server = starttransfer - pretransfer, transfer = total - starttransfer.
- ``fetch`` drives redirects itself (FOLLOWLOCATION off), so each hop in
  ``Exchange.hops`` carries that hop's own numbers; curl's summed figures are
  rebuilt from them in ``pycurlb_document``.
- ``perform`` runs ``curl.perform()``, which releases the GIL for the whole
  transfer: libcurl stamps every socket event in C, and no Python code (UI or
  other) runs between an event and its timestamp.
- An in-transfer failure is data: ``Hop.error`` names its kind (``ERROR_KINDS``)
  and ``EXIT_CODES`` maps each kind to the one-off exit code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from probetop.probes.http.records import PHASES
from probetop.probes.http.request import (
    REDIRECT_CODES,
    SCHEMES,
    HttpRequest,
    configure,
    same_origin_host,
)
from probetop.probes.record import redact, redact_text, redact_url

STAMPS = ("namelookup", "connect", "appconnect", "pretransfer", "starttransfer", "total")

# Exit codes of one-off mode, one per error kind (documented in docs/http.md).
EXIT_CODES: dict[str, int] = {
    "url": 3,  # malformed URL
    "scheme": 4,  # unsupported scheme
    "dns": 5,  # name did not resolve
    "refused": 6,  # TCP connection refused / host unreachable
    "timeout": 7,  # -m or --connect-timeout expired
    "tls": 8,  # handshake or certificate verification failed
    "http_4xx": 9,  # the server answered 4xx
    "http_5xx": 10,  # the server answered 5xx
    "redirects": 11,  # more than --max-redirs redirects
    "other": 12,  # any other transfer error (empty reply, reset, ...)
}
ERROR_KINDS = tuple(EXIT_CODES)

# libcurl error numbers (curl.h) grouped into probetop's error kinds.
_CURL_ERROR_KINDS: dict[int, str] = {
    1: "scheme",  # CURLE_UNSUPPORTED_PROTOCOL
    3: "url",  # CURLE_URL_MALFORMAT
    5: "dns",  # CURLE_COULDNT_RESOLVE_PROXY
    6: "dns",  # CURLE_COULDNT_RESOLVE_HOST
    7: "refused",  # CURLE_COULDNT_CONNECT
    28: "timeout",  # CURLE_OPERATION_TIMEDOUT
    35: "tls",  # CURLE_SSL_CONNECT_ERROR
    47: "redirects",  # CURLE_TOO_MANY_REDIRECTS
    51: "tls",  # CURLE_PEER_FAILED_VERIFICATION (old number)
    53: "tls",  # CURLE_SSL_ENGINE_NOTFOUND
    58: "tls",  # CURLE_SSL_CERTPROBLEM
    59: "tls",  # CURLE_SSL_CIPHER
    60: "tls",  # CURLE_PEER_FAILED_VERIFICATION
    77: "tls",  # CURLE_SSL_CACERT_BADFILE
    80: "tls",  # CURLE_SSL_SHUTDOWN_FAILED
    82: "tls",  # CURLE_SSL_CRL_BADFILE
    83: "tls",  # CURLE_SSL_ISSUER_ERROR
    90: "tls",  # CURLE_SSL_PINNEDPUBKEYNOTMATCH
    91: "tls",  # CURLE_SSL_INVALIDCERTSTATUS
    96: "other",  # CURLE_QUIC_CONNECT_ERROR
}

_HINTS = {
    "url": "check the URL's spelling",
    "scheme": "use an http:// or https:// URL",
    "dns": "check the host name (and --resolve / -4 / -6)",
    "refused": "is a server listening on that address and port?",
    "timeout": "the server did not answer in time (raise -m / --connect-timeout)",
    "tls": "use --cacert FILE for a private CA, or -k to skip verification",
    "redirects": "raise --max-redirs or check for a redirect loop",
}


def error_kind(curl_errno: int, url: str | None = None) -> str:
    """The probetop error kind of a libcurl error number. On an http(s) URL,
    libcurl's "unsupported protocol" is the server's fault (an HTTP/0.9 or
    garbage reply), not the scheme's: ``other``."""
    kind = _CURL_ERROR_KINDS.get(curl_errno, "other")
    if kind == "scheme" and url is not None and url.split(":", 1)[0].lower() in SCHEMES:
        return "other"
    return kind


def status_kind(http_code: int) -> str | None:
    """``http_4xx`` / ``http_5xx`` for error statuses, else None."""
    if 400 <= http_code < 500:
        return "http_4xx"
    if http_code >= 500:
        return "http_5xx"
    return None


def phases_us(
    stamps: dict[str, int], *, failed: str | None = None, got_response: bool = True
) -> dict[str, int | None]:
    """Per-phase durations (us) from libcurl's cumulative stamps of one hop.

    A zero stamp on a successful hop means the step did not happen (no TLS on
    http://, no DNS or TCP on a reused connection): that phase is 0. On a
    failed hop (``failed`` = its error kind) the phase that failed and every
    later one are None, because libcurl fills the later stamps at the time of
    the failure and they would read as real durations.
    """
    dns, conn = stamps.get("namelookup", 0), stamps.get("connect", 0)
    app, pre = stamps.get("appconnect", 0), stamps.get("pretransfer", 0)
    start, total = stamps.get("starttransfer", 0), stamps.get("total", 0)
    out: dict[str, int | None] = {
        "dns": dns,
        "tcp": max(0, conn - dns) if conn else 0,
        "tls": max(0, app - conn) if app else 0,
        "server": max(0, start - pre),
        "transfer": max(0, total - start),
    }
    if failed and failed not in ("http_4xx", "http_5xx"):
        cut = {"dns": 0, "url": 0, "scheme": 0, "refused": 1, "tls": 2}.get(failed)
        if cut is None:  # timeout or other: the first step whose stamp is missing
            cut = 1 if not conn and not pre else 2 if app == 0 and failed == "tls" else 3
            if got_response:
                cut = 4
        for name in PHASES[cut:]:
            out[name] = None
    elif not got_response:
        out["server"] = out["transfer"] = None
    return out


@dataclass
class TlsInfo:
    """What libcurl's verbose log says about the TLS session of a hop."""

    version: str | None = None
    cipher: str | None = None
    cert_expiry: str | None = None
    cert_subject: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "version": self.version,
            "cipher": self.cipher,
            "cert_expiry": self.cert_expiry,
            "cert_subject": self.cert_subject,
        }


@dataclass
class Hop:
    """One request/response of an exchange, with its own timings."""

    url: str
    method: str
    stamps_us: dict[str, int] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    status_line: str | None = None
    http_version: str | None = None
    redirect_url: str | None = None
    tls: TlsInfo | None = None
    error: str | None = None  # an ERROR_KINDS name, or None
    message: str | None = None  # libcurl's message, or ours

    @property
    def phases_us(self) -> dict[str, int | None]:
        return phases_us(self.stamps_us, failed=self.error, got_response=self.http_code > 0)

    @property
    def http_code(self) -> int:
        return int(self.info.get("http_code") or 0)


@dataclass
class Exchange:
    """A request with every hop it took (one hop unless -L followed redirects)."""

    request: HttpRequest
    url: str
    hops: list[Hop] = field(default_factory=list)

    @property
    def final(self) -> Hop:
        return self.hops[-1]

    @property
    def error(self) -> str | None:
        """The first error kind: a transfer error, else the final status class."""
        for hop in self.hops:
            if hop.error:
                return hop.error
        return status_kind(self.final.http_code) if self.hops else None

    @property
    def exit_code(self) -> int:
        kind = self.error
        return EXIT_CODES[kind] if kind else 0

    def message(self) -> str | None:
        """A one-line explanation of ``error`` that says what to do."""
        kind = self.error
        if kind is None:
            return None
        hop = next((h for h in self.hops if h.error), self.final)
        url = _short(redact_url(hop.url))
        if kind.startswith("http_"):
            return f"{url} answered {hop.status_line or hop.http_code}"
        hint = _HINTS.get(kind)
        text = f"{kind} error for {url}: {_short(redact_text(hop.message or ''))}"
        return f"{text} ({hint})" if hint else text


def _short(text: str, limit: int = 200) -> str:
    """A URL or message cut for a one-line message (a URL may be 100 kB)."""
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text)} chars)"


_HTTP_VERSION_NAMES = {1: "1.0", 2: "1.1", 3: "2", 30: "3"}
# libcurl's verbose lines carrying the negotiated TLS session and the certificate.
_TLS_LINE = re.compile(r"SSL connection using (\S+) / (\S+)")
_EXPIRE_LINE = re.compile(r"^\s*expire date: (.+?)\s*$")
_SUBJECT_LINE = re.compile(r"^\s*subject: (.+?)\s*$")


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Server- or libcurl-given text made safe for a terminal and a report:
    control characters (an ESC sequence in a status line) become U+FFFD."""
    return _CONTROL_CHARS.sub("\ufffd", text)


def url_text(raw: bytes | str | None) -> str | None:
    """A URL libcurl reports (from a server's Location, say) as ASCII text:
    bytes that are not printable ASCII are percent-encoded, as curl does
    before it follows a redirect; so a hostile server cannot make decoding fail."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if 0x20 < b < 0x7F else f"%{b:02X}" for b in raw)


def _info(curl: Any, option: int, default: Any = 0) -> Any:
    """One getinfo value; ``default`` when libcurl has none (a transfer that
    failed before it had a URL makes even EFFECTIVE_URL raise)."""
    import pycurl

    try:
        return curl.getinfo(option)
    except (pycurl.error, UnicodeError, ValueError):
        return default


def _info_raw(curl: Any, option: int) -> bytes | None:
    import pycurl

    try:
        raw = curl.getinfo_raw(option)
    except (pycurl.error, ValueError):
        return None
    return raw if isinstance(raw, bytes) else None


def _info_text(curl: Any, option: int) -> str | None:
    raw = _info_raw(curl, option)
    return None if raw is None else printable(raw.decode("utf-8", "replace"))


def read_info(curl: Any) -> dict[str, Any]:
    """pycurlb's keys (seconds as floats), read from a finished handle.
    Strings are read raw and decoded here (never by pycurl, which raises on
    bytes a server sent that are not UTF-8); a value libcurl cannot give is
    0 or None, never an exception."""
    import pycurl

    def info(name: str) -> Any:
        return _info(curl, getattr(pycurl, name))

    us = {name: int(info(f"{name.upper()}_TIME_T") or 0) for name in STAMPS}
    out: dict[str, Any] = {f"{name}_time": us[name] / 1e6 for name in STAMPS}
    out.update(
        {
            "redirect_time": (info("REDIRECT_TIME_T") or 0) / 1e6,
            "redirect_count": info("REDIRECT_COUNT"),
            "http_code": info("RESPONSE_CODE"),
            "effective_url": url_text(_info_raw(curl, pycurl.EFFECTIVE_URL)),
            "primary_ip": _info_text(curl, pycurl.PRIMARY_IP),
            "primary_port": info("PRIMARY_PORT"),
            "local_ip": _info_text(curl, pycurl.LOCAL_IP),
            "local_port": info("LOCAL_PORT"),
            "num_connects": info("NUM_CONNECTS"),
            "size_download": info("SIZE_DOWNLOAD_T"),
            "size_upload": info("SIZE_UPLOAD_T"),
            "speed_download": info("SPEED_DOWNLOAD_T"),
            "speed_upload": info("SPEED_UPLOAD_T"),
            "header_size": info("HEADER_SIZE"),
            "request_size": info("REQUEST_SIZE"),
            "content_type": _info_text(curl, pycurl.CONTENT_TYPE),
            "ssl_verifyresult": info("SSL_VERIFYRESULT"),
            "os_errno": info("OS_ERRNO"),
            "method": _info_text(curl, pycurl.EFFECTIVE_METHOD),
            "_us": us,
            "_http_version": _HTTP_VERSION_NAMES.get(info("INFO_HTTP_VERSION")),
            "_redirect_url": url_text(_info_raw(curl, pycurl.REDIRECT_URL)),
        }
    )
    return out


def pycurlb_info(curl: Any) -> dict[str, Any]:
    """The getinfo values pycurlb prints that ``read_info`` does not read
    (one-off mode only: the sampling worker has no use for them), with
    pycurlb's types: content lengths as floats (-1.0: unknown), ``ssl_engines``
    a list of str. A value libcurl cannot give is its default, never an error."""
    import pycurl

    def number(name: str) -> int:
        value = _info(curl, getattr(pycurl, name, -1))
        return int(value) if isinstance(value, (int, float)) else 0

    def length(name: str) -> float:
        value = _info(curl, getattr(pycurl, name, -1), -1)
        return float(value) if isinstance(value, (int, float)) and value >= 0 else -1.0

    engines = _info(curl, getattr(pycurl, "SSL_ENGINES", -1), [])
    return {
        "content_length_download": length("CONTENT_LENGTH_DOWNLOAD_T"),
        "content_length_upload": length("CONTENT_LENGTH_UPLOAD_T"),
        "http_connectcode": number("HTTP_CONNECTCODE"),
        "httpauth_avail": number("HTTPAUTH_AVAIL"),
        "proxyauth_avail": number("PROXYAUTH_AVAIL"),
        "proxy_ssl_verifyresult": number("PROXY_SSL_VERIFYRESULT"),
        "condition_unmet": number("CONDITION_UNMET"),
        "ssl_engines": [printable(str(e)) for e in engines] if isinstance(engines, list) else [],
        "ftp_entry_path": None,  # an FTP value; http(s) transfers have none
        "scheme": _info_text(curl, getattr(pycurl, "SCHEME", -1)),
    }


def perform(curl: Any, hop: Hop, *, details: bool) -> Hop:
    """Run one configured hop and fill ``hop`` from libcurl's counters.

    ``details`` also captures the status line with a header callback, which
    runs after the first byte is stamped (its microseconds land in the
    transfer phase, not in TTFB). TLS details are not read here: libcurl's
    verbose log, the only place pycurl shows them, costs ~0.25 ms inside the
    handshake when on (measured), so ``tls_details`` gets them from a
    separate handshake after the measured one.
    """
    import pycurl

    status: list[str] = []
    if details:

        def on_header(line: bytes) -> None:
            if line[:5] == b"HTTP/":
                status.append(printable(line.decode("latin-1").strip()))

        curl.setopt(pycurl.HEADERFUNCTION, on_header)
    curl.setopt(pycurl.WRITEFUNCTION, _discard)
    try:
        curl.perform()
    except pycurl.error as exc:
        errno, message = exc.args[0], exc.args[1] if len(exc.args) > 1 else str(exc)
        hop.error = error_kind(errno, hop.url)
        text = message or curl.errstr() or f"curl error {errno}"
        hop.message = printable(text if isinstance(text, str) else repr(text))
    info = read_info(curl)
    info.update(pycurlb_info(curl))
    fill_hop(hop, info)
    if status:
        hop.status_line = status[-1]
    return hop


def tls_details(request: HttpRequest, url: str) -> TlsInfo | None:
    """TLS version, cipher and certificate of ``url``'s server, from a separate
    TLS handshake with the same options (libcurl CONNECT_ONLY: no HTTP request
    is sent, so nothing is asked of the application twice). None if unknown.
    """
    import pycurl

    tls = TlsInfo()

    def on_debug(kind: int, data: bytes) -> None:
        if kind != pycurl.INFOTYPE_TEXT:
            return
        text = printable(data.decode("utf-8", "replace").rstrip("\r\n"))
        if m := _TLS_LINE.search(text):
            tls.version, tls.cipher = m.group(1), m.group(2)
        elif m := _EXPIRE_LINE.match(text):
            tls.cert_expiry = m.group(1)
        elif m := _SUBJECT_LINE.match(text):
            tls.cert_subject = m.group(1)

    curl = pycurl.Curl()
    try:
        configure(curl, request, url, method="GET", body=None, fresh=True)
        curl.setopt(pycurl.CONNECT_ONLY, 1)
        curl.setopt(pycurl.VERBOSE, 1)
        curl.setopt(pycurl.DEBUGFUNCTION, on_debug)
        curl.perform()
    except pycurl.error:
        pass
    finally:
        curl.close()
    return tls if (tls.version or tls.cert_expiry) else None


def fill_hop(hop: Hop, info: dict[str, Any]) -> None:
    """Move a ``read_info`` result into ``hop`` (private keys become fields)."""
    hop.stamps_us = info.pop("_us")
    hop.http_version = info.pop("_http_version")
    hop.redirect_url = info.pop("_redirect_url")
    hop.info = info
    if hop.http_code and not hop.status_line:
        hop.status_line = f"HTTP/{hop.http_version or '?'} {hop.http_code}"


def _discard(data: bytes) -> None:
    """Body sink: counted by libcurl (size_download), not kept."""
    return None


def next_hop(request: HttpRequest, hop: Hop, body: str | None) -> tuple[str, str, str | None]:
    """(url, method, body) of the hop after a redirect, as curl -L picks them.

    Like curl: 301/302 turn a POST into a GET and 303 turns anything but HEAD
    into a GET, unless -X set the method, which curl keeps on every hop.
    """
    url = hop.redirect_url or hop.url
    method = hop.method
    code = hop.http_code
    if not request.method and (
        (code in (301, 302) and method == "POST") or (code == 303 and method != "HEAD")
    ):
        return url, "GET", None
    return url, method, body


def fetch(request: HttpRequest, url: str, *, curl: Any = None, details: bool = True) -> Exchange:
    """One exchange: the request, then each redirect hop when -L is on.

    Hops share one handle, so a redirect to the same host reuses the
    connection exactly as curl -L does.
    """
    import pycurl

    own = curl is None
    curl = curl or pycurl.Curl()
    exchange = Exchange(request, url)
    method, body = request.initial_method(), request.data
    hop_url = url
    try:
        while True:
            curl.reset()
            configure(
                curl,
                request,
                hop_url,
                method=method,
                body=body,
                send_credentials=same_origin_host(url, hop_url),
                fresh=False,
            )
            hop = perform(curl, Hop(hop_url, method), details=details)
            exchange.hops.append(hop)
            if hop.error or not request.follow or hop.http_code not in REDIRECT_CODES:
                break
            if not hop.redirect_url:
                break
            if len(exchange.hops) > request.max_redirs:
                hop.error = "redirects"
                hop.message = f"maximum ({request.max_redirs}) redirects followed"
                break
            scheme = hop.redirect_url.split(":", 1)[0].lower()
            if scheme not in SCHEMES:
                hop.error = "scheme"
                hop.message = f"redirect to a {scheme}:// URL; probetop follows http and https only"
                break
            hop_url, method, body = next_hop(request, hop, body)
    finally:
        if own:
            curl.close()
    if details:
        # One handshake per https server that did one, after all measuring is done.
        seen: dict[tuple[str | None, int | None], TlsInfo | None] = {}
        for hop in exchange.hops:
            parts = urlsplit(hop.url)
            if parts.scheme != "https" or not hop.stamps_us.get("appconnect"):
                continue
            key = (parts.hostname, parts.port)
            if key not in seen:
                seen[key] = tls_details(request, hop.url)
            hop.tls = seen[key]
    return exchange


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
        "error_message": exchange.message(),
        "request": request.redacted(),
        "url": exchange.url,
    }
    return redact(out)
