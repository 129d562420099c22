"""What one HTTP request is, in curl's terms, and how a pycurl handle is set up for it.

Contract:
- ``HttpRequest`` holds the curl-compatible options probetop supports (see
  docs/http.md for the list). It is immutable (list options are tuples) and
  JSON-safe through ``to_dict``/``from_dict``, so the sampling worker process
  gets exactly what the one-off mode uses.
- ``configure(curl, request, url, method, body)`` sets one easy handle for one
  hop. Options follow curl's command-line meaning, not pycurlb's: repeated
  ``-H`` keeps every header, ``-d`` is a form-encoded POST, ``-u`` is sent.
- ``HttpRequest.validate`` checks every option value (``inputs.py``): what
  passes can be handed to libcurl, what does not is a UsageProbeError (exit 2)
  naming the option. ``configure`` hands libcurl bytes (the argv bytes, as
  curl does), and a value libcurl still refuses becomes a UsageProbeError
  naming the curl option, never a pycurl/Unicode/Overflow error.
- ``check_url`` gives the ASCII URL libcurl gets (IDN host in punycode,
  non-ASCII percent-encoded) or rejects it (``HttpUrlError``, exit 3/4).
- ``redacted`` is what JSON output and recordings show of a request:
  credentials as ``***``, the body as its length and SHA-256 unless
  ``record_body`` (``--record-body``).
- ``curl_command`` is the equivalent ``curl -w`` command line (the reference),
  redacted the same way.
- Nothing here imports pycurl at module level: the CLI imports this for ``--help``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from probetop.probes.core.base import UsageProbeError
from probetop.probes.http.inputs import (
    MAX_BODY_BYTES,
    MAX_REDIRS,
    MAX_TIMEOUT_S,
    SCHEMES,
    HttpUrlError,
    arg_bytes,
    check_connect_to,
    check_header,
    check_method,
    check_proxy,
    check_regular_file,
    check_resolve,
    check_text,
    normalise_url,
)
from probetop.probes.record import REDACTED, body_digest, redact_header, redact_url

__all__ = ["SCHEMES", "HttpRequest", "HttpUrlError", "check_url", "configure", "curl_command"]
HTTP_VERSIONS = ("1.0", "1.1", "2", "3")
# curl's default for --max-redirs.
DEFAULT_MAX_REDIRS = 50
REDIRECT_CODES = (301, 302, 303, 307, 308)


_LIST_OPTIONS = ("headers", "resolve", "connect_to")


@dataclass(frozen=True)
class HttpRequest:
    """The curl options one request runs with (curl option in each comment).

    The repeatable options (``headers``, ``resolve``, ``connect_to``) are
    tuples; a list given to the constructor is copied into one.
    """

    method: str | None = None  # -X
    headers: tuple[str, ...] = ()  # -H (repeatable)
    # -d / --data-*, joined with '&' as curl does; the bytes as os.fsdecode text
    # (UTF-8, undecodable bytes as surrogate escapes): arg_bytes(data) is sent.
    data: str | None = None
    user: str | None = None  # -u user:password
    user_agent: str | None = None  # -A
    referer: str | None = None  # -e
    cookie: str | None = None  # -b "n=v; n2=v2" or a cookie file name
    insecure: bool = False  # -k
    cacert: str | None = None  # --cacert
    follow: bool = False  # -L
    max_redirs: int = DEFAULT_MAX_REDIRS  # --max-redirs
    timeout_s: float | None = None  # -m
    connect_timeout_s: float | None = None  # --connect-timeout
    resolve: tuple[str, ...] = ()  # --resolve host:port:addr
    connect_to: tuple[str, ...] = ()  # --connect-to h1:p1:h2:p2
    ip_version: int | None = None  # -4 / -6
    http_version: str | None = None  # --http1.0 / --http1.1 / --http2 / --http3
    head: bool = False  # -I
    compressed: bool = False  # --compressed
    interface: str | None = None  # --interface
    local_port: int | None = None  # --local-port NUM[-NUM]: the first port
    local_port_range: int = 1  # ... and how many from it
    limit_rate: int | None = None  # --limit-rate, bytes/s each way (0: none)
    path_as_is: bool = False  # --path-as-is
    proxy: str | None = None  # -x
    noproxy: str | None = None  # --noproxy: hosts reached without the proxy ("*": all)
    get: bool = False  # -G: the -d data as the URL's query, and a GET
    byte_range: str | None = None  # -r / --range
    max_filesize: int | None = None  # --max-filesize: a larger body fails (exit 63)
    speed_limit: int | None = None  # -Y: bytes/s below which ...
    speed_time_s: int | None = None  # -y: ... for this long the transfer fails (exit 28)
    tcp_fastopen: bool = False  # --tcp-fastopen
    keepalive: bool = True  # curl's TCP keepalive (60 s); --no-keepalive: off
    record_body: bool = False  # --record-body: the body in JSON output and recordings

    def __post_init__(self) -> None:
        for name in _LIST_OPTIONS:
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value or ()))

    def to_dict(self) -> dict[str, Any]:
        """Every option by field name; the repeatable ones as lists (JSON)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _LIST_OPTIONS:
            out[name] = list(out[name])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HttpRequest:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def initial_method(self) -> str:
        """The method of the first hop, as curl picks it."""
        if self.method:
            return self.method.upper()
        if self.head:
            return "HEAD"
        if self.data is not None and not self.get:
            return "POST"
        return "GET"

    def first_url(self, url: str) -> str:
        """The first hop's URL: with -G the -d data is its query (after ``?``,
        or ``&`` when it has one), as curl appends it."""
        if not self.get or self.data is None:
            return url
        base, _hash, fragment = url.partition("#")
        joined = f"{base}{'&' if '?' in base else '?'}{self.data}"
        return f"{joined}#{fragment}" if _hash else joined

    def body(self) -> bytes | None:
        """The request body as sent (the bytes ``data`` stands for)."""
        return None if self.data is None else arg_bytes(self.data)

    def validate(self) -> None:
        """UsageProbeError (exit 2) naming the option for any value libcurl
        must not get: see ``inputs.py`` for the rules."""
        if self.method is not None:
            check_method(self.method)
        for line in self.headers:
            check_header(line)
        for flag, value in (("-A", self.user_agent), ("-e", self.referer)):
            if value is not None:
                check_text(flag, value, header_like=True)
        if self.user is not None:
            check_text("-u", self.user, header_like=False)
        if self.cookie is not None:
            if "=" in self.cookie:
                check_text("-b", self.cookie, header_like=True)
            else:
                check_regular_file("-b (cookie file)", self.cookie)
        if self.cacert is not None:
            check_regular_file("--cacert", self.cacert)
        if self.interface is not None:
            check_text("--interface", self.interface, header_like=True)
        if self.proxy is not None:
            check_proxy(self.proxy)
        for entry in self.resolve:
            check_resolve(entry)
        for entry in self.connect_to:
            check_connect_to(entry)
        if self.data is not None and len(arg_bytes(self.data)) > MAX_BODY_BYTES:
            raise UsageProbeError(
                f"the request body is {len(arg_bytes(self.data))} bytes; probetop sends at "
                f"most {MAX_BODY_BYTES // (1024 * 1024)} MiB (kept in memory, sent every request)"
            )
        for timer, seconds in (
            ("--max-time", self.timeout_s),
            ("--connect-timeout", self.connect_timeout_s),
        ):
            if seconds is not None and not 0 < seconds <= MAX_TIMEOUT_S:
                raise UsageProbeError(
                    f"{timer} must be positive and at most {MAX_TIMEOUT_S:.0f} s "
                    f"(a year; leave it out for no limit), got {seconds}"
                )
        if self.max_redirs < 0:
            raise UsageProbeError(
                f"--max-redirs must be 0 or more, got {self.max_redirs} (curl's -1, no "
                f"limit, is not supported: give up to {MAX_REDIRS}; curl's default is "
                f"{DEFAULT_MAX_REDIRS})"
            )
        if self.max_redirs > MAX_REDIRS:
            raise UsageProbeError(
                f"--max-redirs must be at most {MAX_REDIRS} (every hop is kept), "
                f"got {self.max_redirs}"
            )

    def redacted(self) -> dict[str, Any]:
        """``to_dict`` as JSON output and recordings show it: credentials as
        ``***``, the body as its length and SHA-256 (``--record-body`` adds
        ``data_as_sent``), URLs without user-info or credential parameters."""
        out = self.to_dict()
        out["headers"] = [redact_header(h) for h in self.headers]
        if self.user:
            out["user"] = REDACTED
        if self.cookie and "=" in self.cookie:
            out["cookie"] = REDACTED
        for name in ("proxy", "referer"):
            if out[name]:
                out[name] = redact_url(out[name])
        body = self.body()
        if body is not None:
            out["data"] = body_digest(body)
            if self.record_body:
                out["data_as_sent"] = body.decode("utf-8", "backslashreplace")
        return out


def check_url(url: str) -> str:
    """The ASCII URL libcurl gets (scheme added, IDN host in punycode, non-ASCII
    percent-encoded), or HttpUrlError saying what is wrong with it (exit 3/4)."""
    return normalise_url(url)


def same_origin_host(a: str, b: str) -> bool:
    """True if two URLs name the same host and port (curl's rule for keeping credentials)."""
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.hostname, pa.port or _default_port(pa.scheme)) == (
        pb.hostname,
        pb.port or _default_port(pb.scheme),
    )


def _default_port(scheme: str) -> int:
    return 443 if scheme.lower() == "https" else 80


FIRST_HOP = object()  # configure()'s default body: the request's own data
_CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")


def configure(
    curl: Any,
    request: HttpRequest,
    url: str,
    *,
    method: str | None = None,
    body: str | object | None = FIRST_HOP,
    send_credentials: bool = True,
    fresh: bool = True,
    keep_open: bool = False,
) -> None:
    """Set ``curl`` (a freshly reset pycurl.Curl) for one hop of ``request``.

    ``method``/``body`` are this hop's (they change on a 303 redirect; by
    default the request's own, as on the first hop);
    ``send_credentials`` is False on a hop to another host, where curl drops
    ``-u`` and custom Authorization/Cookie headers. ``fresh`` forces a new
    connection and a cold DNS cache (what a new curl process sees), closed
    when the transfer is done; ``keep_open`` leaves that connection in the
    pool instead, for the caller to close after reading the times: libcurl
    closes a FORBID_REUSE connection before it stamps ``total``, which adds
    the close (~0.05 ms on loopback) to the transfer phase, and a curl
    process closes its connection after -w has its numbers.
    Every string goes to libcurl as bytes (``arg_bytes``); a value libcurl
    refuses raises UsageProbeError naming the curl option.
    """
    import pycurl

    def put(flag: str, option: int, value: Any) -> None:
        if isinstance(value, str):
            value = arg_bytes(value)
        elif isinstance(value, list):
            value = [arg_bytes(v) for v in value]
        try:
            curl.setopt(option, value)
        except (pycurl.error, ValueError, TypeError, OverflowError, UnicodeError) as exc:
            detail = exc.args[-1] if exc.args else exc
            raise UsageProbeError(f"{flag}: libcurl refused the value ({detail})") from None

    method = method or request.initial_method()
    if body is FIRST_HOP:
        body = None if request.get else request.data
        url = request.first_url(url)
    assert body is None or isinstance(body, str)
    put("URL", pycurl.URL, url)
    # http and https only, also after a redirect: a server's Location must not
    # make probetop read file:// or speak gopher:// or dict:// (curl -L allows
    # ftp too; probetop measures HTTP).
    web = pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS
    curl.setopt(pycurl.PROTOCOLS, web)
    curl.setopt(pycurl.REDIR_PROTOCOLS, web)
    curl.setopt(pycurl.NOSIGNAL, 1)  # timeouts must not use SIGALRM in threads
    curl.setopt(pycurl.FOLLOWLOCATION, 0)  # hops are driven one by one (see transfer.py)
    headers = list(request.headers)
    if not send_credentials:
        headers = [h for h in headers if _header_name(h) not in _CREDENTIAL_HEADERS]
    if headers:
        put("-H", pycurl.HTTPHEADER, headers)
    if request.head and method == "HEAD":
        curl.setopt(pycurl.NOBODY, 1)
    elif body is not None:
        put("-d", pycurl.POSTFIELDS, arg_bytes(body))
        if method != "POST":
            put("-X", pycurl.CUSTOMREQUEST, method)
    elif method == "HEAD":
        curl.setopt(pycurl.NOBODY, 1)
    elif method != "GET":
        put("-X", pycurl.CUSTOMREQUEST, method)
    if request.user and send_credentials:
        put("-u", pycurl.USERPWD, request.user)
    put("-A", pycurl.USERAGENT, request.user_agent or _default_user_agent())
    if request.referer:
        put("-e", pycurl.REFERER, request.referer)
    if request.cookie and send_credentials:
        if "=" in request.cookie:
            put("-b", pycurl.COOKIE, request.cookie)
        else:
            put("-b", pycurl.COOKIEFILE, request.cookie)
    if request.insecure:
        curl.setopt(pycurl.SSL_VERIFYPEER, 0)
        curl.setopt(pycurl.SSL_VERIFYHOST, 0)
    if request.cacert:
        put("--cacert", pycurl.CAINFO, request.cacert)
    if request.timeout_s is not None:
        put("--max-time", pycurl.TIMEOUT_MS, max(1, int(request.timeout_s * 1000)))
    if request.connect_timeout_s is not None:
        ms = max(1, int(request.connect_timeout_s * 1000))
        put("--connect-timeout", pycurl.CONNECTTIMEOUT_MS, ms)
    if request.resolve:
        put("--resolve", pycurl.RESOLVE, [check_resolve(e) for e in request.resolve])
    if request.connect_to:
        put("--connect-to", pycurl.CONNECT_TO, [check_connect_to(e) for e in request.connect_to])
    if request.ip_version == 4:
        curl.setopt(pycurl.IPRESOLVE, pycurl.IPRESOLVE_V4)
    elif request.ip_version == 6:
        curl.setopt(pycurl.IPRESOLVE, pycurl.IPRESOLVE_V6)
    if request.http_version:
        put(
            f"--http{request.http_version}",
            pycurl.HTTP_VERSION,
            _http_version_const(request.http_version),
        )
    if request.compressed:
        curl.setopt(pycurl.ACCEPT_ENCODING, "")  # every encoding this libcurl can decode
    if request.interface:
        put("--interface", pycurl.INTERFACE, request.interface)
    if request.local_port is not None:
        put("--local-port", pycurl.LOCALPORT, request.local_port)
        put("--local-port", pycurl.LOCALPORTRANGE, request.local_port_range)
    if request.limit_rate:  # curl's tool sets both directions
        put("--limit-rate", pycurl.MAX_RECV_SPEED_LARGE, request.limit_rate)
        put("--limit-rate", pycurl.MAX_SEND_SPEED_LARGE, request.limit_rate)
    if request.path_as_is:
        curl.setopt(pycurl.PATH_AS_IS, 1)
    if request.proxy:
        # Without -x, libcurl reads http_proxy & co. from the environment, as curl does.
        put("-x", pycurl.PROXY, check_proxy(request.proxy))
    if request.noproxy is not None:
        put("--noproxy", pycurl.NOPROXY, request.noproxy)
    if request.byte_range:
        put("-r", pycurl.RANGE, request.byte_range)
    if request.max_filesize is not None:
        put("--max-filesize", pycurl.MAXFILESIZE_LARGE, request.max_filesize)
    if request.speed_limit is not None or request.speed_time_s is not None:
        # curl's tool: either one alone takes the other's default (1 B/s, 30 s)
        put("-Y", pycurl.LOW_SPEED_LIMIT, request.speed_limit or 1)
        put("-y", pycurl.LOW_SPEED_TIME, request.speed_time_s or 30)
    if request.tcp_fastopen:
        put("--tcp-fastopen", pycurl.TCP_FASTOPEN, 1)
    # curl's tool turns TCP keepalive on (probes every 60 s of idle) unless
    # --no-keepalive; libcurl's own default is off.
    curl.setopt(pycurl.TCP_KEEPALIVE, 1 if request.keepalive else 0)
    if request.keepalive:
        curl.setopt(pycurl.TCP_KEEPIDLE, 60)
        curl.setopt(pycurl.TCP_KEEPINTVL, 60)
    if fresh:
        curl.setopt(pycurl.FRESH_CONNECT, 1)
        curl.setopt(pycurl.FORBID_REUSE, 0 if keep_open else 1)
        curl.setopt(pycurl.DNS_CACHE_TIMEOUT, 0)


def _header_name(line: str) -> str:
    """The lower-case name of a header line (``Name: v``, ``Name:``, ``Name;``)."""
    name, colon, _value = line.partition(":")
    if not colon:
        name = line.rstrip().removesuffix(";")
    return name.strip().lower()


def _http_version_const(version: str) -> int:
    import pycurl

    return {
        "1.0": pycurl.CURL_HTTP_VERSION_1_0,
        "1.1": pycurl.CURL_HTTP_VERSION_1_1,
        "2": pycurl.CURL_HTTP_VERSION_2_0,
        "3": pycurl.CURL_HTTP_VERSION_3,
    }[version]


def _default_user_agent() -> str:
    from probetop.probes import __version__

    return f"probetop/{__version__}"


def check_http_version(version: str | None) -> None:
    """UsageProbeError if this libcurl cannot speak the asked HTTP version."""
    if version not in ("2", "3"):
        return
    import pycurl

    features = pycurl.version_info()[4]
    bit = pycurl.VERSION_HTTP2 if version == "2" else pycurl.VERSION_HTTP3
    if not features & bit:
        raise UsageProbeError(
            f"--http{version} is not supported by this libcurl ({pycurl.version}); "
            "install a pycurl wheel built with nghttp2/ngtcp2"
        )


def curl_command(request: HttpRequest, url: str) -> str:
    """The ``curl`` command line measuring the same thing, redacted as
    recordings are (credentials ``***``; the body as ``<N bytes, sha256:...>``
    unless ``--record-body``)."""
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_starttransfer} %{time_total}\\n"]
    if request.method:
        args += ["-X", request.method]
    for header in request.headers:
        args += ["-H", redact_header(header)]
    body = request.body()
    if body is not None:
        shown = (
            body.decode("utf-8", "backslashreplace") if request.record_body else body_digest(body)
        )
        args += ["--data-binary", shown]
    if request.user:
        args += ["-u", REDACTED]
    for flag, value in (("-A", request.user_agent), ("-e", request.referer)):
        if value:
            args += [flag, redact_url(value) if flag == "-e" else value]
    if request.cookie:
        args += ["-b", REDACTED if "=" in request.cookie else request.cookie]
    if request.insecure:
        args.append("-k")
    if request.cacert:
        args += ["--cacert", request.cacert]
    if request.follow:
        args += ["-L", "--max-redirs", str(request.max_redirs)]
    if request.timeout_s is not None:
        args += ["-m", f"{request.timeout_s:g}"]
    if request.connect_timeout_s is not None:
        args += ["--connect-timeout", f"{request.connect_timeout_s:g}"]
    for entry in request.resolve:
        args += ["--resolve", entry]
    for entry in request.connect_to:
        args += ["--connect-to", entry]
    if request.ip_version:
        args.append(f"-{request.ip_version}")
    if request.http_version:
        args.append(f"--http{request.http_version}")
    if request.head:
        args.append("-I")
    if request.compressed:
        args.append("--compressed")
    if request.interface:
        args += ["--interface", request.interface]
    if request.local_port is not None:
        last = request.local_port + request.local_port_range - 1
        ports = (
            str(request.local_port)
            if last == request.local_port
            else f"{request.local_port}-{last}"
        )
        args += ["--local-port", ports]
    if request.limit_rate:
        args += ["--limit-rate", str(request.limit_rate)]
    if request.path_as_is:
        args.append("--path-as-is")
    if request.proxy:
        args += ["-x", redact_url(request.proxy)]
    if request.noproxy is not None:
        args += ["--noproxy", request.noproxy]
    if request.get:
        args.append("-G")
    if request.byte_range:
        args += ["-r", request.byte_range]
    if request.max_filesize is not None:
        args += ["--max-filesize", str(request.max_filesize)]
    if request.speed_limit is not None:
        args += ["-Y", str(request.speed_limit)]
    if request.speed_time_s is not None:
        args += ["-y", str(request.speed_time_s)]
    if request.tcp_fastopen:
        args.append("--tcp-fastopen")
    if not request.keepalive:
        args.append("--no-keepalive")
    args.append(redact_url(url))
    return shlex.join(args)
