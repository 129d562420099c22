"""What libcurl says about a finished transfer, read so that it never raises.

Contract: ``read_info(curl)`` gives pycurlb's keys (seconds as floats) and
the hop's private ones (``_us``: the cumulative ``*_TIME_T`` stamps of
``STAMPS``, in integer microseconds); ``pycurlb_info`` the rest of what
pycurlb prints (one-off mode only). Strings are read raw and decoded here
(never by pycurl, which raises on bytes that are not UTF-8); a value
libcurl cannot give is 0 or None (or its default), never an exception.
``printable`` and ``url_text`` make server-given text safe for a terminal.
"""

from __future__ import annotations

import re
from typing import Any

STAMPS = ("namelookup", "connect", "appconnect", "pretransfer", "starttransfer", "total")
#: The phases made of them (transfer.phases_us), in time order.
PHASES = ("dns", "tcp", "tls", "server", "transfer")

_HTTP_VERSION_NAMES = {1: "1.0", 2: "1.1", 3: "2", 30: "3"}

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


# libcurl 8 words a failed connect "Failed to connect to HOST:PORT after N ms:
# Could not connect to server"; curl 7.88 (the reference) "... HOST port PORT
# after N ms: Couldn't connect to server". Its strerror texts moved from
# "Couldn't" to "Could not" in 8.x as well.
_CONNECT_FAILED = re.compile(r"Failed to connect to (.+):(\d+) after (\d+) ms: (.*)", re.S)
_STRERROR_788 = {"Could not connect to server": "Couldn't connect to server"}


def curl788_message(text: str) -> str:
    """libcurl 8's error message in curl 7.88's words (``%{errormsg}``), where
    the two builds word the same failure differently; other text as is."""
    match = _CONNECT_FAILED.fullmatch(text)
    if match is None:
        return text
    host, port, ms, why = match.groups()
    return f"Failed to connect to {host} port {port} after {ms} ms: {_STRERROR_788.get(why, why)}"


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


def _port(value: Any) -> int:
    """A port as curl 7.88 reports it: 0 when there is none. libcurl 8 (the
    pycurl wheel's) says -1 after a failed connect or DNS lookup; curl 7.88's
    ``%{remote_port}``/``%{local_port}`` and pycurlb's ports are 0 there."""
    return value if isinstance(value, int) and value > 0 else 0


def read_info(curl: Any) -> dict[str, Any]:
    """pycurlb's keys (seconds as floats), read from a finished handle.
    Strings are read raw and decoded here (never by pycurl, which raises on
    bytes a server sent that are not UTF-8); a value libcurl cannot give is
    0 or None, never an exception."""
    import pycurl

    def info(name: str) -> Any:
        return _info(curl, getattr(pycurl, name))

    us = {name: int(info(f"{name.upper()}_TIME_T") or 0) for name in STAMPS}
    primary_ip = _info_text(curl, pycurl.PRIMARY_IP)
    connected = bool(primary_ip)
    if not connected:
        # No connection was made (refused, DNS, connect timeout): libcurl 8
        # stamps pretransfer and starttransfer with the failure's time anyway;
        # curl 7.88 (the reference) never reaches them and says 0.
        us["pretransfer"] = us["starttransfer"] = 0
    out: dict[str, Any] = {f"{name}_time": us[name] / 1e6 for name in STAMPS}
    out.update(
        {
            "redirect_time": (info("REDIRECT_TIME_T") or 0) / 1e6,
            "redirect_count": info("REDIRECT_COUNT"),
            "http_code": info("RESPONSE_CODE"),
            "effective_url": url_text(_info_raw(curl, pycurl.EFFECTIVE_URL)),
            "primary_ip": primary_ip,
            "primary_port": _port(info("PRIMARY_PORT")),
            "local_ip": _info_text(curl, pycurl.LOCAL_IP),
            "local_port": _port(info("LOCAL_PORT")),
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


def content_length(curl: Any) -> int:
    """The final response's Content-Length as libcurl parsed it, -1 when it
    sent none (Go's ``resp.ContentLength``, blackbox_exporter's
    ``probe_http_content_length``). Read after the transfer, never in it."""
    import pycurl

    value = _info(curl, getattr(pycurl, "CONTENT_LENGTH_DOWNLOAD_T", -1), -1)
    return int(value) if isinstance(value, (int, float)) and value >= 0 else -1


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
        # curl 7.88 has no scheme until a connection is made (``null``, empty text).
        "scheme": _info_text(curl, getattr(pycurl, "SCHEME", -1))
        if _info_text(curl, pycurl.PRIMARY_IP)
        else None,
    }


def libcurl_version() -> str:
    """libcurl's version string (curl's %{json} ``curl_version``): the one
    pycurl is linked with, without pycurl's own name in front."""
    import pycurl

    text = str(pycurl.version)
    return text.split(" ", 1)[1] if text.startswith("PycURL/") and " " in text else text
