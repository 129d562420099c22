"""One HTTP exchange through libcurl, hop by hop, and what its numbers mean.

Contract:
- Every time comes from libcurl's ``*_TIME_T`` integer-microsecond counters,
  which are cumulative from the start of the hop (``stamps_us``). Phases are
  httpstat's, except TLS (appconnect - connect, as reference.md says):
  DNS = namelookup, TCP = connect - namelookup, TLS = appconnect - connect,
  server = starttransfer - pretransfer, transfer = total - starttransfer.
- ``fetch`` drives redirects itself (FOLLOWLOCATION off), so each hop in
  ``Exchange.hops`` carries that hop's own numbers; curl's summed figures are
  rebuilt from them in ``pycurlb.pycurlb_document``. What libcurl reports
  is read in ``curlinfo``.
- ``perform`` runs ``curl.perform()``, which releases the GIL for the whole
  transfer: libcurl stamps every socket event in C, and no Python code (UI or
  other) runs between an event and its timestamp.
- An in-transfer failure is data: ``Hop.error`` names its kind
  (``errorkinds.ERROR_KINDS``) and ``Hop.curl_code`` is libcurl's error
  number, which ``Exchange.exit_status`` gives as curl's exit code.
"""

from __future__ import annotations

import calendar
import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from probetop.probes.http.curlinfo import (
    PHASES,
    curl788_message,
    printable,
    pycurlb_info,
    read_info,
)
from probetop.probes.http.errorkinds import (
    FAIL_EXIT,
    KIND_EXIT,
    error_kind,
    kind_hint,
    status_kind,
)
from probetop.probes.http.request import (
    REDIRECT_CODES,
    SCHEMES,
    HttpRequest,
    configure,
    same_origin_host,
)
from probetop.probes.record import redact_text, redact_url

if TYPE_CHECKING:
    from probetop.probes.http.verbose import VerboseTrace


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
    # Unix seconds of every certificate's NotAfter, as the server sent the
    # chain (libcurl CERTINFO; only when ``tls_details(chain=True)``).
    not_after_s: tuple[int, ...] = ()

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
    curl_code: int = 0  # libcurl's CURLE_* number (curl's exit code), 0: none
    # The final response's header lines (name, value) as received, in order
    # (not the 1xx ones before it): curl's %{header_json}, %header{name}.
    headers: list[tuple[str, str]] = field(default_factory=list)

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
    def curl_code(self) -> int:
        """libcurl's error number of the first failed hop (curl's exit code,
        ``%{exitcode}``), 0 when every transfer completed (an HTTP error too)."""
        for hop in self.hops:
            if hop.error:
                return hop.curl_code or KIND_EXIT.get(hop.error, 0)
        return 0

    def exit_status(self, *, fail: bool = False) -> int:
        """curl's exit code: ``curl_code``, else 22 for a final status >= 400
        with ``fail`` (-f/--fail), else 0 (an HTTP error without -f is a
        completed transfer, as for curl)."""
        code = self.curl_code
        if code == 0 and fail and self.hops and self.final.http_code >= 400:
            return FAIL_EXIT
        return code

    def curl_error(self, *, fail: bool = False) -> str | None:
        """curl's %{errormsg}: libcurl's message for the failed hop, curl's
        "The requested URL returned error: N" for an HTTP error with ``fail``,
        None when the exit code is 0."""
        hop = next((h for h in self.hops if h.error), None)
        if hop is not None:
            return curl788_message(hop.message or "")
        if fail and self.hops and self.final.http_code >= 400:
            return f"The requested URL returned error: {self.final.http_code}"
        return None

    def message(self, *, fail: bool = False) -> str | None:
        """A one-line explanation of ``error`` that says what to do; for an
        HTTP error status only with ``fail`` (curl says nothing without -f)."""
        kind = self.error
        if kind is None or (kind.startswith("http_") and not fail):
            return None
        hop = next((h for h in self.hops if h.error), self.final)
        url = _short(redact_url(hop.url))
        if kind.startswith("http_"):
            return f"{url} answered {hop.status_line or hop.http_code}"
        hint = kind_hint(kind)
        text = f"{kind} error for {url}: {_short(redact_text(hop.message or ''))}"
        return f"{text} ({hint})" if hint else text


def _short(text: str, limit: int = 200) -> str:
    """A URL or message cut for a one-line message (a URL may be 100 kB)."""
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text)} chars)"


# libcurl's verbose lines carrying the negotiated TLS session and the certificate.
# (Patterns, compiled on first use by re's cache: plain http:// never needs them.)
_TLS_LINE = r"SSL connection using (\S+) / (\S+)"
_EXPIRE_LINE = r"^\s*expire date: (.+?)\s*$"
_SUBJECT_LINE = r"^\s*subject: (.+?)\s*$"


def perform(
    curl: Any,
    hop: Hop,
    *,
    details: bool,
    sink: Callable[[bytes], Any] | None = None,
    skip_redirect_body: bool = False,
    header_sink: Callable[[bytes], bool] | None = None,
) -> Hop:
    """Run one configured hop and fill ``hop`` from libcurl's counters.

    ``details`` also captures the status line with a header callback, which
    runs after the first byte is stamped (its microseconds land in the
    transfer phase, not in TTFB). TLS details are not read here: libcurl's
    verbose log, the only place pycurl shows them, costs ~0.25 ms inside the
    handshake when on (measured), so ``tls_details`` gets them from a
    separate handshake after the measured one.

    ``sink`` (curl's output mode, -w or -o FILE) gets the body as libcurl
    hands it over, from the write callback, as curl writes it; otherwise the
    body is discarded. ``skip_redirect_body`` (-L): a redirect's body that
    will be followed is not written, as libcurl ignores it with -L.
    ``header_sink`` sees each header line of every hop first (curl's -J);
    False from it fails the transfer as curl's header callback does (23).
    """
    import pycurl

    status: list[str] = []
    if details or sink is not None or header_sink is not None:

        def on_header(line: bytes) -> int | None:
            if header_sink is not None and not header_sink(line):
                return 0  # libcurl: CURLE_WRITE_ERROR, as curl's tool_header_cb
            if line[:5] == b"HTTP/":
                status.append(printable(line.decode("latin-1").strip()))
                hop.headers.clear()  # a new response: the 1xx before it is not kept
            elif b":" in line:
                name, _, value = line.decode("utf-8", "surrogateescape").partition(":")
                hop.headers.append((name, value.strip(" \t\r\n")))
            return None

        curl.setopt(pycurl.HEADERFUNCTION, on_header)
    if sink is None:
        curl.setopt(pycurl.WRITEFUNCTION, _discard)
    else:
        write = sink
        if skip_redirect_body:

            def write_unless_followed(data: bytes) -> None:
                if not _followed(status, hop.headers):
                    sink(data)

            write = write_unless_followed
        curl.setopt(pycurl.WRITEFUNCTION, write)
    try:
        curl.perform()
    except pycurl.error as exc:
        errno, message = exc.args[0], exc.args[1] if len(exc.args) > 1 else str(exc)
        hop.error = error_kind(errno, hop.url)
        hop.curl_code = int(errno)
        if errno == FAIL_EXIT:  # -f: libcurl stopped at the error status, as curl does
            hop.error = status_kind(int(_code(curl))) or hop.error
        text = message or curl.errstr() or f"curl error {errno}"
        hop.message = printable(text if isinstance(text, str) else repr(text))
    info = read_info(curl)
    info.update(pycurlb_info(curl))
    fill_hop(hop, info)
    if status:
        hop.status_line = status[-1]
    return hop


def cookie_engine() -> Any:
    """curl's cookie engine for one command (-b FILE, -c): a CurlShare of
    cookies that ``fetch`` gives each URL's handle."""
    import pycurl

    cookies = pycurl.CurlShare()
    cookies.setopt(pycurl.SH_SHARE, pycurl.LOCK_DATA_COOKIE)
    return cookies


def save_cookies(cookies: Any, path: str) -> bool:
    """Write every cookie of ``cookies`` to ``path`` as curl's -c does at its
    end (libcurl's Netscape format; "-" is stdout); whether the whole jar
    is there (True for "-", which curl does not check either).

    libcurl does not say whether its write worked (a FLUSH returns nothing
    and its fclose goes unchecked), so the jar is first written to a
    private file for the bytes it must hold. A regular file (or a path not
    there yet) is then libcurl's to write, as curl's -c writes it (a new
    file renamed over it), and is read back and compared; a device or a
    pipe (/dev/null, /dev/stdout, /dev/full) gets those bytes written here
    the way libcurl writes one (opened, truncated, written), with every
    error seen; without a private copy (TMPDIR full), FILE is written and
    judged by whether it is there. Before, the check was "is FILE a regular file now": a jar
    to /dev/null or /dev/stdout was said to have failed, and one that
    libcurl could not replace (a read-only file) was said to be saved."""
    import stat
    import tempfile
    from pathlib import Path

    if path == "-":
        _flush_cookies(cookies, path)
        return True
    try:
        with tempfile.TemporaryDirectory(prefix="probetop-cookies-") as private:
            copy = os.path.join(private, "jar")
            _flush_cookies(cookies, copy)
            expected = Path(copy).read_bytes()
    except OSError:
        # No private copy (a full or read-only temp directory): FILE is still
        # written, and only judged by whether it is there.
        _flush_cookies(cookies, path)
        return os.path.exists(path)
    try:
        mode: int | None = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            try:
                view = memoryview(expected)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError:
            return False
        return True
    _flush_cookies(cookies, path)
    try:
        return Path(path).read_bytes() == expected
    except PermissionError:
        return True  # written, but not ours to read back (a write-only file)
    except OSError:
        return False


def _flush_cookies(cookies: Any, path: str) -> None:
    """libcurl writes the jar of ``cookies`` to ``path``. A shared jar is
    written only when asked (COOKIELIST FLUSH), not as each handle closes,
    so it is written once, after the last URL, as curl's."""
    import pycurl

    curl = pycurl.Curl()
    try:
        curl.setopt(pycurl.SHARE, cookies)
        curl.setopt(pycurl.COOKIEJAR, path)
        curl.setopt(pycurl.COOKIELIST, "FLUSH")
    finally:
        curl.close()


def tls_details(request: HttpRequest, url: str, *, chain: bool = False) -> TlsInfo | None:
    """TLS version, cipher and certificate of ``url``'s server, from a separate
    TLS handshake with the same options (libcurl CONNECT_ONLY: no HTTP request
    is sent, so nothing is asked of the application twice). None if unknown.
    ``chain``: also every sent certificate's NotAfter (``not_after_s``).
    """
    import pycurl

    tls = TlsInfo()

    def on_debug(kind: int, data: bytes) -> None:
        if kind != pycurl.INFOTYPE_TEXT:
            return
        text = printable(data.decode("utf-8", "replace").rstrip("\r\n"))
        if m := re.search(_TLS_LINE, text):
            tls.version, tls.cipher = m.group(1), m.group(2)
        elif m := re.match(_EXPIRE_LINE, text):
            tls.cert_expiry = m.group(1)
        elif m := re.match(_SUBJECT_LINE, text):
            tls.cert_subject = m.group(1)

    curl = pycurl.Curl()
    try:
        configure(curl, request, url, method="GET", body=None, fresh=True)
        curl.setopt(pycurl.CONNECT_ONLY, 1)
        curl.setopt(pycurl.VERBOSE, 1)
        curl.setopt(pycurl.DEBUGFUNCTION, on_debug)
        if chain:
            curl.setopt(pycurl.OPT_CERTINFO, 1)
        curl.perform()
        if chain:
            tls.not_after_s = _not_after(curl.getinfo(pycurl.INFO_CERTINFO))
    except pycurl.error:
        pass
    finally:
        curl.close()
    return tls if (tls.version or tls.cert_expiry) else None


def _not_after(certinfo: Any) -> tuple[int, ...]:
    """Every certificate's "Expire date" (OpenSSL's ASN1_TIME_print: "Nov 30
    12:50:05 2026 GMT") as Unix seconds; one that does not parse is left out."""
    out = []
    for cert in certinfo or ():
        for entry in cert:
            name, value = (_str(x) for x in entry)
            if name.lower() == "expire date":
                with contextlib.suppress(ValueError):
                    parsed = time.strptime(value.strip(), "%b %d %H:%M:%S %Y GMT")
                    out.append(calendar.timegm(parsed))
    return tuple(out)


def fill_hop(hop: Hop, info: dict[str, Any]) -> None:
    """Move a ``read_info`` result into ``hop`` (private keys become fields)."""
    hop.stamps_us = info.pop("_us")
    hop.http_version = info.pop("_http_version")
    hop.redirect_url = info.pop("_redirect_url")
    hop.info = info
    if hop.http_code and not hop.status_line:
        hop.status_line = f"HTTP/{hop.http_version or '?'} {hop.http_code}"


def _followed(status: list[str], headers: list[tuple[str, str]]) -> bool:
    """Whether the response being received is a redirect that -L follows."""
    parts = status[-1].split() if status else []
    if len(parts) < 2 or not parts[1].isdigit() or int(parts[1]) not in REDIRECT_CODES:
        return False
    return any(name.strip().lower() == "location" and value for name, value in headers)


def certs_text(certinfo: Any) -> str:
    """curl's ``%{certs}`` from libcurl's CURLINFO_CERTINFO (pycurl's list of
    (name, value) lists): each "name:value" entry on its line, the ``Cert``
    entry (the PEM) without its "Cert:" prefix, as curl 7.88's tool_writeout.c."""
    out: list[str] = []
    for cert in certinfo or ():
        for entry in cert:
            name, value = (_str(x) for x in entry)
            text = value if name.lower() == "cert" else f"{name}:{value}"
            if text and not text.endswith("\n"):
                text += "\n"
            out.append(text)
    return "".join(out)


def _str(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


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


def _code(curl: Any) -> int:
    import pycurl

    try:
        return int(curl.getinfo(pycurl.RESPONSE_CODE) or 0)
    except (pycurl.error, TypeError, ValueError):
        return 0


def fetch(
    request: HttpRequest,
    url: str,
    *,
    curl: Any = None,
    details: bool = True,
    fail: bool = False,
    sink: Callable[[bytes], Any] | None = None,
    certinfo: bool = False,
    header_sink: Callable[[bytes], bool] | None = None,
    trace: VerboseTrace | None = None,
    cookies: Any = None,
) -> Exchange:
    """One exchange: the request, then each redirect hop when -L is on.

    Hops share one handle, so a redirect to the same host reuses the
    connection exactly as curl -L does. ``fail`` (-f): libcurl stops at a
    status >= 400 before the body (CURLOPT_FAILONERROR) and the hop fails
    with curl's error 22, as curl -f does. ``sink`` receives the body of
    the hop curl would write (``perform``); ``certinfo`` asks libcurl for
    the certificate chain (CURLOPT_CERTINFO; curl's %{certs}), kept in
    each hop's ``info["certinfo"]``. ``trace`` (-v) gets libcurl's debug
    callback for every hop (probetop/http/verbose.py), and a note where a
    redirect is followed, in libcurl's words. ``cookies``: a pycurl
    CurlShare of cookies (``cookie_engine``), so every URL of one command
    sees the cookies the ones before it got, as curl's one handle does.
    """
    import pycurl

    own = curl is None
    curl = curl or pycurl.Curl()
    exchange = Exchange(request, url)
    # -G: the data is the first hop's query, not a body
    method, body = request.initial_method(), None if request.get else request.data
    hop_url = request.first_url(url)
    try:
        if cookies is not None:
            # Once per handle: curl_easy_reset keeps a handle's share (libcurl's
            # contract), and pycurl refuses to set one twice, so a -L hop that
            # set it again failed with "Curl object already sharing".
            curl.setopt(pycurl.SHARE, cookies)
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
            if fail:
                curl.setopt(pycurl.FAILONERROR, 1)
            if certinfo:
                curl.setopt(pycurl.OPT_CERTINFO, 1)
            if trace is not None:
                curl.setopt(pycurl.VERBOSE, 1)
                curl.setopt(pycurl.DEBUGFUNCTION, trace)
            if cookies is not None:
                curl.setopt(pycurl.COOKIEFILE, "")  # the engine on, as -b FILE or -c turn it
            hop = perform(
                curl,
                Hop(hop_url, method),
                details=details,
                sink=sink,
                skip_redirect_body=request.follow,
                header_sink=header_sink,
            )
            if certinfo:
                try:
                    hop.info["certinfo"] = curl.getinfo(pycurl.INFO_CERTINFO)
                except (pycurl.error, UnicodeDecodeError):
                    hop.info["certinfo"] = []
            exchange.hops.append(hop)
            if hop.error or not request.follow or hop.http_code not in REDIRECT_CODES:
                break
            if not hop.redirect_url:
                break
            if len(exchange.hops) > request.max_redirs:
                hop.error = "redirects"
                hop.message = f"Maximum ({request.max_redirs}) redirects followed"  # curl's words
                break
            scheme = hop.redirect_url.split(":", 1)[0].lower()
            if scheme not in SCHEMES:
                hop.error = "scheme"
                hop.message = f"redirect to a {scheme}:// URL; probetop follows http and https only"
                break
            hop_url, method, body = next_hop(request, hop, body)
            if trace is not None:  # libcurl says this when it follows; here we do
                trace.note(f"Issue another request to this URL: '{hop_url}'")
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
