"""Every value a user gives ``probetop http``, checked once and turned into the
bytes libcurl gets.

Why one module: hostile input (non-ASCII, control characters, NUL bytes,
header injection, endless files, numbers libcurl cannot hold) used to reach
pycurl, which raised UnicodeEncodeError, ValueError or OverflowError from deep
inside a request. Here every option value is checked against one rule per
kind of value, so what passes can be handed to libcurl as is, and what does
not gets a one-line message naming the option (``UsageProbeError``, exit 2)
or, for a URL, ``HttpUrlError`` (exit 3 malformed, 4 scheme).

Contract:

- ``arg_bytes(text)``: the bytes a command-line string stands for (what the
  shell passed, ``os.fsencode``): curl sends argv bytes as they are, so does
  probetop. Never raises.
- ``check_text(flag, value, header_like=...)``: NUL is refused everywhere
  (libcurl takes C strings); in values that end up in a request line or a
  header (``header_like``) CR, LF and other control characters are refused
  too (header injection). Non-ASCII is allowed and sent as UTF-8, as curl does.
- ``check_header(line, where)``: curl's forms ``Name: value``, ``Name:``
  (remove a header libcurl would send), ``Name;`` (send it empty). A line
  without ``:`` or a trailing ``;`` is refused (curl ignores it silently),
  and so is a name that is not an HTTP token.
- ``check_method``: an HTTP token (``-X 'GET / HTTP/1.1'`` is refused).
- ``normalise_url(url)``: the ASCII URL libcurl gets, or ``HttpUrlError``.
  Like curl: no scheme means ``http://``; spaces and control characters are
  refused (curl: "URL rejected: Malformed input"); an internationalised host
  name becomes punycode as curl built with libidn2 does (UTS #46,
  non-transitional: ``straße.de`` -> ``xn--strae-oqa.de``, ``bücher.example``
  -> ``xn--bcher-kva.example``), and non-ASCII bytes in the user-info, path,
  query and fragment are percent-encoded (UTF-8), as curl does for the path.
- ``idna_host``, ``check_resolve``, ``check_connect_to``, ``check_proxy``:
  the host-bearing options, checked and converted the same way.
- ``read_at_file(name, flag, limit)``: an ``@FILE`` argument, read up to
  ``limit`` bytes (``-`` is stdin, refused when it is a terminal); a
  directory, an unreadable file or more than ``limit`` bytes (``@/dev/zero``)
  is a UsageProbeError, so memory stays bounded whatever the file.
- ``check_regular_file(flag, name)``: files libcurl reads itself (``--cacert``,
  a ``-b`` cookie file) must be readable regular files: libcurl would read
  ``/dev/zero`` forever inside a request, where no signal can stop it.
- ``rate_limit``, ``local_ports``, ``retry_number``: --limit-rate's,
  --local-port's and --retry's (-delay, -max-time) values, read as curl
  7.88 reads them (``OptionValueError``: curl's "is badly used
  here", exit 2).
- Limits: ``MAX_BODY_BYTES`` (request body), ``MAX_HEADER_FILE_BYTES``,
  ``MAX_TIMEOUT_S``, ``MAX_REDIRS``.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
import sys
import unicodedata
from urllib.parse import urlsplit

from probetop.probes.core.base import TargetProbeError, UsageProbeError
from probetop.probes.core.options import OptionValueError
from probetop.probes.record import redact_shown

SCHEMES = ("http", "https")
PROXY_SCHEMES = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")

MAX_BODY_BYTES = 16 * 1024 * 1024  # all -d/--data* together; kept in memory, resent each request
MAX_HEADER_FILE_BYTES = 1024 * 1024  # one -H @FILE
MAX_CA_FILE_BYTES = 64 * 1024 * 1024  # --cacert, -b cookie file
MAX_TIMEOUT_S = 365 * 86400.0  # -m / --connect-timeout: a year; omit the option for none
MAX_REDIRS = 1000  # one-off mode keeps every hop; curl's default is 50
MAX_HOST_BYTES = 253


class HttpUrlError(TargetProbeError):
    """A URL probetop will not send: ``kind`` is ``url`` (malformed) or ``scheme``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        # curl's exit codes (errorkinds.KIND_EXIT): 3 CURLE_URL_MALFORMAT,
        # 1 CURLE_UNSUPPORTED_PROTOCOL.
        self.exit_code = 3 if kind == "url" else 1


def arg_bytes(text: str) -> bytes:
    """The bytes of a command-line string (UTF-8; undecodable argv bytes come
    back as they were). A str that no command line can hold (a lone UTF-16
    surrogate outside the escape range) is encoded with ``surrogatepass``."""
    try:
        return os.fsencode(text)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def shown(value: str, limit: int = 80) -> str:
    """A value quoted for a message: credentials hidden (``redact_shown``:
    a header typed without its colon or with a CR/LF too), escaped, cut to
    ``limit`` characters."""
    text = repr(redact_shown(value))
    return text if len(text) <= limit else text[: limit - 4] + "...'"


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def shown_name(name: str) -> str:
    """A file name for a message: as typed when printable, else escaped."""
    return shown(name, 200) if _UNPRINTABLE.search(name) or len(name) > 200 else name


def check_text(flag: str, value: str, *, header_like: bool) -> None:
    """UsageProbeError for a NUL byte, or (``header_like``) CR/LF/control characters."""
    if "\x00" in value:
        raise UsageProbeError(f"{flag}: the value contains a NUL byte, which libcurl cannot send")
    if header_like:
        m = _CONTROL.search(value)
        if m:
            what = "CR/LF" if m.group() in "\r\n" else f"control character {m.group()!r}"
            raise UsageProbeError(
                f"{flag}: {what} in {shown(value)} is refused: it would end the "
                "header line and inject another (give each header with its own -H)"
            )


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def check_header(line: str, where: str = "-H") -> None:
    """UsageProbeError unless ``line`` is one of curl's header forms (see module doc)."""
    check_text(where, line, header_like=True)
    name, colon, _value = line.partition(":")
    if not colon:
        stripped = line.rstrip()
        if not stripped.endswith(";"):
            raise UsageProbeError(
                f"{where}: {shown(line)} has no colon; curl would silently ignore it. "
                "Write 'Name: value', 'Name:' to remove a header libcurl adds, "
                "or 'Name;' to send it with an empty value"
            )
        name = stripped[:-1]
    if not _TOKEN.match(name.strip()) or name != name.rstrip():
        raise UsageProbeError(
            f"{where}: {shown(name)} is not a header name "
            "(letters, digits and !#$%&'*+-.^_`|~, no spaces)"
        )


def check_method(method: str) -> None:
    if not _TOKEN.match(method):
        raise UsageProbeError(
            f"-X: {shown(method)} is not an HTTP method name "
            "(letters, digits and !#$%&'*+-.^_`|~; no spaces, no line breaks)"
        )


# -- @FILE -------------------------------------------------------------------
def read_at_file(name: str, flag: str, limit: int) -> bytes:
    """The content of an ``@FILE`` argument (``-``: stdin), at most ``limit`` bytes."""
    if "\x00" in name:
        raise UsageProbeError(f"{flag} @FILE: the file name contains a NUL byte")
    try:
        if name == "-":
            if sys.stdin is None or sys.stdin.isatty():
                # curl would wait for Ctrl-D; in the dashboard's add-probe line
                # that read would take the UI's terminal. Pipe the data in.
                raise UsageProbeError(
                    f"{flag} @-: standard input is a terminal; pipe the data in "
                    f"(printf 'a=1' | probetop http {flag} @- URL) or use @FILE"
                )
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(name, "rb") as f:
                if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                    raise IsADirectoryError(21, "Is a directory")
                data = f.read(limit + 1)
    except UnicodeError:
        raise UsageProbeError(f"{flag} @FILE: {shown(name)} is not a valid file name") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageProbeError(f"{flag} @FILE: cannot read {shown_name(name)}: {reason}") from None
    if len(data) > limit:
        raise UsageProbeError(
            f"{flag} @{shown_name(name)}: more than {_size(limit)}; probetop keeps the request in "
            "memory and sends it again on every request, so it refuses larger ones"
        )
    return data


def check_regular_file(flag: str, name: str) -> None:
    """UsageProbeError unless ``name`` is a readable regular file libcurl may read."""
    if "\x00" in name:
        raise UsageProbeError(f"{flag}: the file name contains a NUL byte")
    where = f"{flag} {shown_name(name)}"
    try:
        st = os.stat(name)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise UsageProbeError(f"{where}: {kind}; give a file")
        if st.st_size > MAX_CA_FILE_BYTES:
            raise UsageProbeError(f"{where}: larger than {_size(MAX_CA_FILE_BYTES)}")
        with open(name, "rb"):
            pass
    except UnicodeError:
        raise UsageProbeError(f"{where}: not a valid file name") from None
    except OSError as exc:
        raise UsageProbeError(f"{where}: {exc.strerror or exc}") from None


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


# -- host names ---------------------------------------------------------------
_DOTS = re.compile("[.\u3002\uff0e\uff61]")
_DEVIATIONS = "ßς"  # kept by UTS #46 non-transitional processing (libidn2, curl)


def idna_host(host: str) -> str:
    """``host`` in ASCII: punycode for non-ASCII labels (see module doc).
    ValueError with a reason when it cannot be one."""
    if host.isascii():
        return host
    labels = _DOTS.split(host)
    out: list[str] = []
    for i, label in enumerate(labels):
        if not label:
            if 0 < i == len(labels) - 1:  # a trailing dot (fully qualified)
                out.append("")
                continue
            raise ValueError("empty label in the host name")
        if label.isascii():
            out.append(label.lower())
            continue
        import encodings.idna  # here: non-ASCII host names only (stringprep is slow to load)

        nfc = unicodedata.normalize("NFC", label)
        try:
            ascii_label = encodings.idna.ToASCII(nfc).decode("ascii")
            if any(ch in nfc.lower() for ch in _DEVIATIONS):
                pieces = re.split(f"([{_DEVIATIONS}])", nfc.lower())
                mapped = "".join(
                    p if p in _DEVIATIONS else encodings.idna.nameprep(p) for p in pieces
                )
                ascii_label = "xn--" + mapped.encode("punycode").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(
                f"label {shown(label, 60)} is not a valid internationalised name ({exc})"
            ) from None
        if not 0 < len(ascii_label) <= 63:
            raise ValueError(f"label {shown(label, 60)} is longer than 63 bytes in ASCII")
        out.append(ascii_label)
    result = ".".join(out)
    if len(result.rstrip(".")) > MAX_HOST_BYTES:
        raise ValueError(f"host name longer than {MAX_HOST_BYTES} bytes")
    return result


def _percent_encode(raw: bytes) -> str:
    """ASCII kept as is (curl leaves %zz alone too), every other byte as %XX."""
    return "".join(chr(b) if b < 0x80 else f"%{b:02X}" for b in raw)


def _host_port(hostport: bytes, what: str) -> tuple[str, str]:
    """(ASCII host, port text) of ``host[:port]`` / ``[v6][:port]``; ValueError."""
    if hostport.startswith(b"["):
        close = hostport.find(b"]")
        if close < 0:
            raise ValueError("unclosed '[' of an IPv6 address")
        literal = hostport[1:close].decode("ascii", "replace")
        try:
            ipaddress.IPv6Address(literal.replace("%25", "%", 1))
        except ValueError:
            raise ValueError(f"[{shown(literal, 60)[1:-1]}] is not an IPv6 address") from None
        rest = hostport[close + 1 :]
        if rest and not rest.startswith(b":"):
            raise ValueError("unexpected text after ']'")
        return f"[{literal}]", rest[1:].decode("ascii", "replace")
    host, colon, port = hostport.rpartition(b":")
    if not colon:
        host, port = hostport, b""
    try:
        text = host.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"the {what} is not valid UTF-8") from None
    if "[" in text or "]" in text or ":" in text:
        raise ValueError(f"'[', ']' or ':' in the {what} (IPv6 addresses go in brackets: [::1])")
    ascii_host = idna_host(text)
    bad = _BAD_HOST.search(ascii_host) or _BAD_PERCENT.search(ascii_host)
    if bad:
        raise ValueError(f"{bad.group()!r} cannot be in a host name (curl refuses it too)")
    return ascii_host, port.decode("ascii", "replace")


# curl's hostname_check list (lib/urlapi.c) /:#?!@{}[]\$'"^`*<>=;,+&(), plus
# space, control characters and non-ASCII left over; '%' stays (curl decodes
# %XX in host names). Written as the complement, the printable ASCII left: the
# same set (tests/http/test_http_hostile.py), but compiled in 0.1 ms where the
# class ranging to U+10FFFF took 4-16 ms of every one-off's start (issue 28).
_BAD_HOST = re.compile(r"[^-%.0-9A-Z_a-z|~]")


_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _check_port(port: str) -> None:
    if port and (not port.isdigit() or not port.isascii() or int(port) > 65535):
        raise ValueError(f"port {shown(port, 40)} is not a number from 0 to 65535")


_SCHEME = re.compile(rb"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _normalise(url: str, schemes: tuple[str, ...], error: type[Exception], flag: str | None) -> str:
    shown_url = shown(url, 120)
    where = f"{flag}: " if flag else ""

    def fail(kind: str, reason: str) -> Exception:
        message = f"{where}malformed URL {shown_url}: {reason[:200]}"
        if error is HttpUrlError:
            return HttpUrlError(kind, message)
        return error(message)

    raw = arg_bytes(url.strip(" \t\r\n"))
    for i, byte in enumerate(raw):
        if byte < 0x20 or byte == 0x7F:
            raise fail(
                "url", f"control character {chr(byte)!r} at position {i} (curl refuses it too)"
            )
        if byte == 0x20:
            raise fail("url", f"white space at position {i} (percent-encode it: %20)")
    m = _SCHEME.match(raw)
    if m is None:
        head = re.split(rb"[/?#@]", raw, maxsplit=1)[0]
        if raw.find(b"://") >= 0 and raw.find(b"://") <= len(head):
            raise fail("url", "the scheme must be letters, digits, '+', '-' or '.' (http, https)")
        raw = b"http://" + raw  # curl's guess for a URL without a scheme
        m = _SCHEME.match(raw)
        assert m is not None
    scheme = m.group(1).decode("ascii")
    if scheme.lower() not in schemes:
        message = (
            f"{where}unsupported scheme {shown(scheme, 40)} in {shown_url}: "
            f"use {' or '.join(s + '://' for s in schemes)}"
        )
        if error is HttpUrlError:
            raise HttpUrlError("scheme", message)
        raise error(message)
    rest = raw[m.end() :]
    cut = min(
        (i for i in (rest.find(b"/"), rest.find(b"?"), rest.find(b"#")) if i >= 0),
        default=len(rest),
    )
    authority, tail = rest[:cut], rest[cut:]
    userinfo, at, hostport = authority.rpartition(b"@")
    try:
        host, port = _host_port(hostport, "host name")
        _check_port(port)
    except ValueError as exc:
        raise fail("url", str(exc)) from None
    if not host or host == "[]":
        raise fail("url", "no host name")
    netloc = (
        # An '@' inside the user-info is encoded: the last '@' ends it (as
        # Python's urlsplit and the redaction read it), whatever parser follows.
        (_percent_encode(userinfo).replace("@", "%40") + "@" if at else "")
        + host
        + (f":{port}" if port or hostport.endswith(b":") else "")
    )
    result = f"{scheme}://{netloc}{_percent_encode(tail)}"
    try:  # what every later step reads the URL with must read it
        parts = urlsplit(result)
        _ = parts.port
    except ValueError as exc:
        raise fail("url", str(exc)) from None
    if not parts.hostname:
        raise fail("url", "no host name")
    return result


def normalise_url(url: str) -> str:
    """The ASCII http(s) URL libcurl gets for ``url``, or HttpUrlError (see module doc)."""
    return _normalise(url, SCHEMES, HttpUrlError, None)


def check_proxy(proxy: str) -> str:
    """``-x``: the proxy URL in ASCII (no scheme: http://), or UsageProbeError."""
    check_text("-x", proxy, header_like=True)
    return _normalise(proxy, PROXY_SCHEMES, UsageProbeError, "-x")


def _split_host(entry: bytes) -> tuple[bytes, bool, bytes]:
    """(host, whether a ':' followed it, the rest) of ``host:rest`` / ``[v6]:rest``."""
    if entry.startswith(b"["):
        close = entry.find(b"]")
        if close < 0 or entry[close + 1 : close + 2] not in (b":", b""):
            raise ValueError("unclosed '[' of an IPv6 address")
        return entry[: close + 1], entry[close + 1 : close + 2] == b":", entry[close + 2 :]
    host, colon, rest = entry.partition(b":")
    return host, bool(colon), rest


def _entry_host(host: bytes, *, wildcard: bool) -> str:
    if not host or (wildcard and host == b"*"):
        return host.decode("ascii")
    ascii_host, port = _host_port(host, "host name")
    if port:
        raise ValueError("a host name cannot contain ':'")
    return ascii_host


def check_resolve(entry: str) -> str:
    """``--resolve [+|-]HOST:PORT:ADDR[,ADDR]...`` in ASCII, or UsageProbeError."""
    check_text("--resolve", entry, header_like=True)
    raw = arg_bytes(entry)
    prefix = raw[:1] if raw[:1] in (b"+", b"-") else b""
    try:
        host, colon, rest = _split_host(raw[len(prefix) :])
        port, colon2, addrs = rest.partition(b":")
        ascii_host = _entry_host(host, wildcard=True)
        if not (ascii_host and colon and port) or (prefix != b"-" and not colon2):
            raise ValueError("the form is HOST:PORT:ADDR[,ADDR...] (or -HOST:PORT to remove)")
        _check_port(port.decode("ascii", "replace"))
        if prefix != b"-":
            if not addrs:
                raise ValueError("no address after HOST:PORT:")
            for addr in addrs.decode("ascii", "replace").split(","):
                ipaddress.ip_address(addr.strip().removeprefix("[").removesuffix("]"))
    except ValueError as exc:
        raise UsageProbeError(f"--resolve {shown(entry)}: {exc}") from None
    tail = f":{addrs.decode('ascii')}" if colon2 else ""
    return f"{prefix.decode()}{ascii_host}:{port.decode()}{tail}"


def check_connect_to(entry: str) -> str:
    """``--connect-to HOST1:PORT1:HOST2:PORT2`` (any part may be empty), or UsageProbeError."""
    check_text("--connect-to", entry, header_like=True)
    try:
        host1, colon1, rest = _split_host(arg_bytes(entry))
        port1, colon2, rest = rest.partition(b":")
        host2, colon3, port2 = _split_host(rest)
        if not (colon1 and colon2 and colon3):
            raise ValueError("the form is HOST1:PORT1:HOST2:PORT2 (parts may be empty)")
        parts = []
        for host, port in ((host1, port1), (host2, port2)):
            _check_port(port.decode("ascii", "replace"))
            parts += [_entry_host(host, wildcard=False), port.decode("ascii")]
    except ValueError as exc:
        raise UsageProbeError(f"--connect-to {shown(entry)}: {exc}") from None
    return ":".join(parts)


def rate_limit(text: str) -> int:
    """curl 7.88's --limit-rate SPEED: whole bytes/s, with an optional unit
    K, M or G (1024-based) or B; 0 is no limit. Anything else is curl's
    "is badly used here" (exit 2)."""
    match = re.fullmatch(r"\s*([0-9]+)([kKmMgGbB]?)", text)
    if match is None:
        raise OptionValueError(f"is badly used here: {text!r} (bytes/s, with K, M, G or B)")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(match[2].lower(), 1)
    return int(match[1]) * scale


def local_ports(text: str) -> tuple[int, int]:
    """curl 7.88's --local-port NUM[-NUM]: the first port and how many to try
    (0: any port). Anything else is curl's "is badly used here" (exit 2)."""
    match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", text)
    first = int(match[1]) if match else -1
    last = int(match[2]) if match and match[2] else first
    if match is None or not 0 <= first <= last <= 65535:
        raise OptionValueError(f"is badly used here: {text!r} (NUM or NUM-NUM, 0-65535)")
    return first, last - first + 1


def retry_number(text: str) -> int:
    """curl 7.88's --retry, --retry-delay and --retry-max-time value
    (str2unum): a whole number, 0 or more, leading blanks allowed. Its words
    for anything else (exit 2)."""
    stripped = text.lstrip()
    if re.fullmatch(r"-[0-9]+", stripped):
        raise OptionValueError("expected a positive numerical parameter")
    if not re.fullmatch(r"\+?[0-9]+", stripped):
        raise OptionValueError("expected a proper numerical parameter")
    return int(stripped)
