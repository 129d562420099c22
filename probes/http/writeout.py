"""curl's ``-w/--write-out FORMAT`` for one-off exchanges, formatted as curl 7.88 does.

Contract:
- ``WriteOut(format)`` parses the format once (``%{name}`` variables, case
  blind as in curl; ``%header{name}``; ``%%``; the escapes ``\\n \\r \\t``);
  anything curl prints as is (an unknown ``%x``, a ``%{`` without ``}``, an
  unknown escape) is kept as text. ``read_format`` reads ``@FILE`` / ``@-``
  as curl does (line ends dropped, the lines joined).
- ``WriteOut.render(transfer)`` gives ``(stream, bytes)`` chunks in order
  (``%{stdout}`` / ``%{stderr}`` switch the stream), and the warnings curl
  prints for unknown variables. ``%{onerror}`` ends the output when the
  transfer's exit code is 0.
- Values (``transfer_values``) are curl's for the same transfer: times in
  seconds with 6 decimals from libcurl's integer microseconds (summed over
  redirect hops, as libcurl does with -L), ``%{http_code}`` as 3 digits in
  text and an int in ``%{json}``, strings that libcurl has none of are empty
  in text and ``null`` in JSON. ``%{json}`` has curl 7.88's keys in its order,
  then ``curl_version`` (the libcurl that measured, as curl prints its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from probetop.probes.http.curlinfo import STAMPS
from probetop.probes.http.transfer import Exchange, certs_text

Stream = Literal["stdout", "stderr"]
# How curl writes each kind of value (tool_writeout.c's writeTime, writeLong ...).
Kind = Literal["time", "long", "code", "offset", "string"]

#: curl 7.88's --write-out variables with a value, in its (alphabetical) order:
#: the order and keys of %{json}.
VARIABLES: tuple[tuple[str, Kind], ...] = (
    ("certs", "string"),
    ("content_type", "string"),
    ("errormsg", "string"),
    ("exitcode", "long"),
    ("filename_effective", "string"),
    ("ftp_entry_path", "string"),
    ("http_code", "code"),
    ("http_connect", "code"),
    ("http_version", "string"),
    ("local_ip", "string"),
    ("local_port", "long"),
    ("method", "string"),
    ("num_certs", "long"),
    ("num_connects", "long"),
    ("num_headers", "long"),
    ("num_redirects", "long"),
    ("proxy_ssl_verify_result", "long"),
    ("redirect_url", "string"),
    ("referer", "string"),
    ("remote_ip", "string"),
    ("remote_port", "long"),
    ("response_code", "code"),
    ("scheme", "string"),
    ("size_download", "offset"),
    ("size_header", "long"),
    ("size_request", "long"),
    ("size_upload", "offset"),
    ("speed_download", "offset"),
    ("speed_upload", "offset"),
    ("ssl_verify_result", "long"),
    ("time_appconnect", "time"),
    ("time_connect", "time"),
    ("time_namelookup", "time"),
    ("time_pretransfer", "time"),
    ("time_redirect", "time"),
    ("time_starttransfer", "time"),
    ("time_total", "time"),
    ("url", "string"),
    ("url_effective", "string"),
    ("urlnum", "long"),
)
_KINDS: dict[str, Kind] = dict(VARIABLES)
#: Variables that do something instead of printing a value.
SPECIAL = ("header_json", "json", "onerror", "stderr", "stdout")
#: Every name ``%{...}`` knows.
NAMES = frozenset(_KINDS) | frozenset(SPECIAL)
#: The most a -w @FILE may hold (curl's own limit is 256 kB; a format is short).
MAX_FORMAT_BYTES = 1024 * 1024
_HTTP_VERSIONS = {"1.0": "1", "1.1": "1.1", "2": "2", "3": "3"}
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}


@dataclass(frozen=True, slots=True)
class Transfer:
    """One URL's outcome as -w reads it: the exchange (None when the URL was
    refused before sending), the URL as given and its index, curl's exit
    code and error message for it, where the body went (``-o``), the
    Referer sent (``-e``), the libcurl version string."""

    exchange: Exchange | None
    url: str
    urlnum: int
    exit_code: int
    errormsg: str | None
    method: str = "GET"
    output: str | None = None
    referer: str | None = None
    curl_version: str = ""
    # False when curl never gave libcurl the URL (-O on a URL ending in /):
    # %{url_effective} is then empty, where a malformed URL still shows it.
    started: bool = True


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def transfer_values(t: Transfer) -> dict[str, int | str | None]:
    """Every ``VARIABLES`` value of one transfer (None: curl has none, so
    nothing in text and ``null`` in JSON). Times are integer microseconds."""
    ex = t.exchange
    hops = ex.hops if ex is not None else []
    final = hops[-1] if hops else None
    info: Mapping[str, Any] = final.info if final is not None else {}
    out: dict[str, int | str | None] = {
        f"time_{name}": sum(_int(h.stamps_us.get(name)) for h in hops) for name in STAMPS
    }
    out["time_redirect"] = sum(_int(h.stamps_us.get("total")) for h in hops[:-1])
    code = _int(info.get("http_code"))
    version = final.http_version if final is not None else None
    out.update(
        {
            "certs": certs_text(info.get("certinfo")),
            "content_type": _text(info.get("content_type")),
            "errormsg": t.errormsg if t.exit_code else None,
            "exitcode": t.exit_code,
            "filename_effective": t.output,
            "ftp_entry_path": None,
            "http_code": code,
            "http_connect": _int(info.get("http_connectcode")),
            "http_version": _HTTP_VERSIONS.get(version or "", "0"),
            "local_ip": _text(info.get("local_ip")) or "",
            "local_port": _int(info.get("local_port")),
            "method": _text(info.get("method")) or t.method,
            "num_certs": len(info.get("certinfo") or ()),
            "num_connects": sum(_int(h.info.get("num_connects")) for h in hops),
            "num_headers": len(final.headers) if final is not None else 0,
            "num_redirects": max(0, len(hops) - 1),
            "proxy_ssl_verify_result": _int(info.get("proxy_ssl_verifyresult")),
            "redirect_url": _text(final.redirect_url) if final is not None else None,
            "referer": t.referer,
            "remote_ip": _text(info.get("primary_ip")) or "",
            "remote_port": _int(info.get("primary_port")),
            "response_code": code,
            "scheme": _text(info.get("scheme")),
            "size_download": _int(info.get("size_download")),
            "size_header": sum(_int(h.info.get("header_size")) for h in hops),
            "size_request": sum(_int(h.info.get("request_size")) for h in hops),
            "size_upload": _int(info.get("size_upload")),
            "speed_download": _int(info.get("speed_download")),
            "speed_upload": _int(info.get("speed_upload")),
            "ssl_verify_result": _int(info.get("ssl_verifyresult")),
            "url": t.url,
            "url_effective": _text(info.get("effective_url")) or (t.url if t.started else ""),
            "urlnum": t.urlnum,
        }
    )
    return out


def _format(kind: Kind, value: int | str | None) -> str:
    """One value as curl prints it in text (None: nothing)."""
    if value is None:
        return ""
    if kind == "time":
        us = int(value)
        return f"{us // 1_000_000}.{us % 1_000_000:06d}"
    if kind == "code":
        return f"{int(value):03d}"
    return str(value)


def json_string(text: str, *, lowercase: bool = False) -> str:
    """A JSON string as curl writes one: the two-letter escapes, ``\\u00XX``
    for other control characters, everything else as is (not ASCII-escaped)."""
    out = ['"']
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 32:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch.lower() if lowercase and "A" <= ch <= "Z" else ch)
    out.append('"')
    return "".join(out)


def json_document(values: Mapping[str, int | str | None], curl_version: str) -> str:
    """``%{json}``: one line, curl 7.88's keys and order, then curl_version."""
    parts = []
    for name, kind in VARIABLES:
        value = values[name]
        if value is None:
            parts.append(f'"{name}":null')
        elif kind == "string":
            parts.append(f'"{name}":{json_string(str(value))}')
        else:
            text = _format(kind, value) if kind == "time" else str(int(value))
            parts.append(f'"{name}":{text}')
    parts.append(f'"curl_version":{json_string(curl_version)}')
    return "{" + ",".join(parts) + "}"


def header_json(headers: list[tuple[str, str]]) -> str:
    """``%{header_json}``: the final response's headers, names lowercased, each
    name once with every value in a list, in the order received (curl 8's
    form; 7.88 wrote broken JSON for a repeated header)."""
    grouped: dict[str, list[str]] = {}
    for name, value in headers:
        grouped.setdefault(name.lower(), []).append(value)
    entries = [
        f"{json_string(name)}:[{','.join(json_string(v) for v in values)}]"
        for name, values in grouped.items()
    ]
    return "{" + ",\n".join(entries) + "\n}"


Token = tuple[Literal["text", "var", "header"], str]


def parse_format(fmt: str) -> list[Token]:
    """The format as text runs, ``%{variables}`` and ``%header{names}``."""
    tokens: list[Token] = []
    text: list[str] = []
    i, n = 0, len(fmt)

    def flush() -> None:
        if text:
            tokens.append(("text", "".join(text)))
            text.clear()

    while i < n:
        ch = fmt[i]
        if ch == "%" and i + 1 < n:
            nxt = fmt[i + 1]
            if nxt == "%":
                text.append("%")
                i += 2
            elif nxt == "{":
                end = fmt.find("}", i)
                if end < 0:
                    text.append("%{")
                    i += 2
                else:
                    flush()
                    tokens.append(("var", fmt[i + 2 : end]))
                    i = end + 1
            elif fmt.startswith("header{", i + 1):
                end = fmt.find("}", i + 8)
                if end < 0:
                    text.append("%header{")
                    i += 8
                else:
                    flush()
                    tokens.append(("header", fmt[i + 8 : end]))
                    i = end + 1
            else:
                text.append(fmt[i : i + 2])  # curl prints what it does not know
                i += 2
        elif ch == "\\" and i + 1 < n:
            text.append(_ESCAPES.get(fmt[i + 1], fmt[i : i + 2]))
            i += 2
        else:
            text.append(ch)
            i += 1
    flush()
    return tokens


class WriteOut:
    """A parsed -w format; ``render`` it once per transfer."""

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.tokens = parse_format(fmt)

    def wants_certs(self) -> bool:
        """Whether the format reads the certificate chain (``%{certs}``,
        ``%{num_certs}``, ``%{json}``): only then is libcurl asked for it."""
        names = {v.lower() for kind, v in self.tokens if kind == "var"}
        return bool(names & {"certs", "num_certs", "json"})

    def unknown(self) -> list[str]:
        """The ``%{names}`` curl would warn about, in order."""
        return [v for kind, v in self.tokens if kind == "var" and v.lower() not in NAMES]

    def render(self, t: Transfer) -> tuple[list[tuple[Stream, str]], list[str]]:
        """(chunks in order with their stream, warnings for unknown variables)."""
        values = transfer_values(t)
        hops = t.exchange.hops if t.exchange is not None else []
        headers = hops[-1].headers if hops else []
        chunks: list[tuple[Stream, str]] = []
        warnings: list[str] = []
        stream: Stream = "stdout"
        for kind, value in self.tokens:
            if kind == "text":
                chunks.append((stream, value))
                continue
            if kind == "header":
                if len(value) < 256:
                    match = next((v for k, v in headers if k.lower() == value.lower()), None)
                    if match is not None:
                        chunks.append((stream, match))
                continue
            name = value.lower()
            if name == "onerror":
                if t.exit_code == 0:
                    break
            elif name in ("stdout", "stderr"):
                stream = "stdout" if name == "stdout" else "stderr"
            elif name == "json":
                chunks.append((stream, json_document(values, t.curl_version)))
            elif name == "header_json":
                chunks.append((stream, header_json(headers)))
            elif name in _KINDS:
                chunks.append((stream, _format(_KINDS[name], values[name])))
            else:
                warnings.append(f"unknown --write-out variable: '{value}'")
        return chunks, warnings


def read_format(value: str, read_file: Any) -> str:
    """The -w argument: ``@FILE`` / ``@-`` read with ``read_file(name)`` (bytes),
    each line's end (from its first CR or LF) dropped and the lines joined,
    as curl reads it; anything else as given."""
    if not value.startswith("@"):
        return value
    raw: bytes = read_file(value[1:])
    text = raw.decode("utf-8", "surrogateescape")
    return "".join(line.split("\r", 1)[0] for line in text.split("\n"))
