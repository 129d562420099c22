"""What one HTTP request is, in curl's terms, and how a pycurl handle is set up for it.

Contract:
- ``HttpRequest`` holds the curl-compatible options probetop supports (see
  docs/http.md for the list). It is immutable (list options are tuples) and
  JSON-safe through ``to_dict``/``from_dict``, so the sampling worker process
  gets exactly what the one-off mode uses.
- ``configure(curl, request, url, method, body)`` sets one easy handle for one
  hop. Options follow curl's command-line meaning, not pycurlb's: repeated
  ``-H`` keeps every header, ``-d`` is a form-encoded POST, ``-u`` is sent.
- ``check_url`` rejects what is not an HTTP(S) URL before anything is sent.
- ``curl_command`` is the equivalent ``curl -w`` command line (the reference).
- Nothing here imports pycurl at module level: the CLI imports this for ``--help``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from probetop.probes.core.base import TargetProbeError, UsageProbeError
from probetop.probes.record import REDACTED, redact_header, redact_url

SCHEMES = ("http", "https")
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
    data: str | None = None  # -d / --data-binary, joined with '&' as curl does (latin-1)
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
    proxy: str | None = None  # -x

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
        if self.data is not None:
            return "POST"
        return "GET"

    def redacted(self) -> dict[str, Any]:
        """``to_dict`` with credentials hidden, for JSON output and recordings."""
        out = self.to_dict()
        out["headers"] = [redact_header(h) for h in self.headers]
        if self.user:
            name, sep, _pw = self.user.partition(":")
            out["user"] = f"{name}:{REDACTED}" if sep else name
        if self.cookie and "=" in self.cookie:
            out["cookie"] = REDACTED
        if self.proxy:
            out["proxy"] = redact_url(self.proxy)
        return out


def normalise_url(url: str) -> str:
    """curl's guess for a URL without a scheme is http://; do the same."""
    if "://" not in url:
        return "http://" + url
    return url


class HttpUrlError(TargetProbeError):
    """A URL probetop will not send: ``kind`` is ``url`` (malformed) or ``scheme``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        # One-off exit codes (transfer.EXIT_CODES): 3 malformed URL, 4 scheme.
        self.exit_code = 3 if kind == "url" else 4


def check_url(url: str) -> str:
    """The URL with a scheme, or HttpUrlError saying what is wrong with it."""
    full = normalise_url(url.strip())
    shown = redact_url(url)
    try:
        parts = urlsplit(full)
        _ = parts.port  # raises ValueError on a non-numeric or out-of-range port
    except ValueError as exc:
        raise HttpUrlError("url", f"malformed URL {shown!r}: {exc}") from None
    if parts.scheme.lower() not in SCHEMES:
        raise HttpUrlError(
            "scheme",
            f"unsupported scheme {parts.scheme!r} in {shown!r}: "
            "probetop http measures http:// and https:// URLs",
        )
    if not parts.hostname:
        raise HttpUrlError("url", f"malformed URL {shown!r}: no host name")
    if any(c in full for c in " \t\r\n"):
        raise HttpUrlError("url", f"malformed URL {shown!r}: contains white space")
    return full


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
) -> None:
    """Set ``curl`` (a freshly reset pycurl.Curl) for one hop of ``request``.

    ``method``/``body`` are this hop's (they change on a 303 redirect; by
    default the request's own, as on the first hop);
    ``send_credentials`` is False on a hop to another host, where curl drops
    ``-u`` and custom Authorization/Cookie headers. ``fresh`` forces a new
    connection and a cold DNS cache (what a new curl process sees).
    """
    import pycurl

    method = method or request.initial_method()
    if body is FIRST_HOP:
        body = request.data
    assert body is None or isinstance(body, str)
    curl.setopt(pycurl.URL, url)
    curl.setopt(pycurl.NOSIGNAL, 1)  # timeouts must not use SIGALRM in threads
    curl.setopt(pycurl.FOLLOWLOCATION, 0)  # hops are driven one by one (see transfer.py)
    headers = list(request.headers)
    if not send_credentials:
        headers = [
            h for h in headers if h.partition(":")[0].strip().lower() not in _CREDENTIAL_HEADERS
        ]
    if headers:
        curl.setopt(pycurl.HTTPHEADER, headers)
    if request.head and method == "HEAD":
        curl.setopt(pycurl.NOBODY, 1)
    elif body is not None:
        curl.setopt(pycurl.POSTFIELDS, body.encode("latin-1"))
        if method != "POST":
            curl.setopt(pycurl.CUSTOMREQUEST, method)
    elif method == "HEAD":
        curl.setopt(pycurl.NOBODY, 1)
    elif method != "GET":
        curl.setopt(pycurl.CUSTOMREQUEST, method)
    if request.user and send_credentials:
        curl.setopt(pycurl.USERPWD, request.user)
    curl.setopt(pycurl.USERAGENT, request.user_agent or _default_user_agent())
    if request.referer:
        curl.setopt(pycurl.REFERER, request.referer)
    if request.cookie and send_credentials:
        if "=" in request.cookie:
            curl.setopt(pycurl.COOKIE, request.cookie)
        else:
            curl.setopt(pycurl.COOKIEFILE, request.cookie)
    if request.insecure:
        curl.setopt(pycurl.SSL_VERIFYPEER, 0)
        curl.setopt(pycurl.SSL_VERIFYHOST, 0)
    if request.cacert:
        curl.setopt(pycurl.CAINFO, request.cacert)
    if request.timeout_s is not None:
        curl.setopt(pycurl.TIMEOUT_MS, max(1, int(request.timeout_s * 1000)))
    if request.connect_timeout_s is not None:
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(request.connect_timeout_s * 1000)))
    if request.resolve:
        curl.setopt(pycurl.RESOLVE, list(request.resolve))
    if request.connect_to:
        curl.setopt(pycurl.CONNECT_TO, list(request.connect_to))
    if request.ip_version == 4:
        curl.setopt(pycurl.IPRESOLVE, pycurl.IPRESOLVE_V4)
    elif request.ip_version == 6:
        curl.setopt(pycurl.IPRESOLVE, pycurl.IPRESOLVE_V6)
    if request.http_version:
        curl.setopt(pycurl.HTTP_VERSION, _http_version_const(request.http_version))
    if request.compressed:
        curl.setopt(pycurl.ACCEPT_ENCODING, "")  # every encoding this libcurl can decode
    if request.interface:
        curl.setopt(pycurl.INTERFACE, request.interface)
    if request.proxy:
        # Without -x, libcurl reads http_proxy & co. from the environment, as curl does.
        curl.setopt(pycurl.PROXY, request.proxy)
    if fresh:
        curl.setopt(pycurl.FRESH_CONNECT, 1)
        curl.setopt(pycurl.FORBID_REUSE, 1)
        curl.setopt(pycurl.DNS_CACHE_TIMEOUT, 0)


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
    """The ``curl`` command line measuring the same thing (credentials redacted)."""
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_starttransfer} %{time_total}\\n"]
    if request.method:
        args += ["-X", request.method]
    for header in request.headers:
        args += ["-H", redact_header(header)]
    if request.data is not None:
        args += ["--data-binary", request.data]
    if request.user:
        args += ["-u", request.user.partition(":")[0] + ":" + REDACTED]
    for flag, value in (("-A", request.user_agent), ("-e", request.referer)):
        if value:
            args += [flag, value]
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
    if request.proxy:
        args += ["-x", redact_url(request.proxy)]
    args.append(redact_url(url))
    return shlex.join(args)
