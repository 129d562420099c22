"""The ``HttpRequest`` that parsed curl options describe.

Contract: ``request_from_options(values)`` builds it, reading ``@FILE``
arguments as curl does (-d strips newlines, --data-binary keeps bytes,
--data-urlencode encodes, -H @FILE one header per line), within
``MAX_BODY_BYTES`` for the whole body; every header is checked. Raises
``UsageProbeError`` (exit 2) naming the option.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from probetop.probes.core.base import UsageProbeError
from probetop.probes.http.inputs import (
    MAX_BODY_BYTES,
    MAX_HEADER_FILE_BYTES,
    arg_bytes,
    check_header,
    read_at_file,
)
from probetop.probes.http.request import DEFAULT_MAX_REDIRS, HttpRequest


def request_from_options(values: Mapping[str, Any]) -> HttpRequest:
    """The ``HttpRequest`` the curl options describe (``@FILE`` read as curl
    does, within ``MAX_BODY_BYTES`` for the whole body)."""
    items: Sequence[tuple[str, str]] = values.get("data") or ()
    data = None
    if items:
        parts: list[bytes] = []
        budget = MAX_BODY_BYTES
        for kind, value in items:
            parts.append(_data_item(kind, value, budget))
            budget -= len(parts[-1]) + 1
            if budget < 0:
                raise UsageProbeError(
                    f"the request body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB; "
                    "probetop keeps it in memory and sends it on every request"
                )
        data = os.fsdecode(b"&".join(parts))
    max_redirs = values.get("max_redirs")
    timeout_s = _seconds(values, "max_time", "max_time_ms", "-m/--max-time")
    connect_timeout_s = _seconds(
        values, "connect_timeout", "connect_timeout_ms", "--connect-timeout"
    )
    ports = values.get("local_port")
    return HttpRequest(
        method=values.get("method"),
        headers=tuple(_headers(values.get("headers") or ())),
        data=data,
        user=values.get("user"),
        user_agent=values.get("user_agent"),
        referer=values.get("referer"),
        cookie=values.get("cookie"),
        insecure=bool(values.get("insecure", False)),
        cacert=values.get("cacert"),
        follow=bool(values.get("location", False)),
        max_redirs=DEFAULT_MAX_REDIRS if max_redirs is None else max_redirs,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        resolve=tuple(values.get("resolve") or ()),
        connect_to=tuple(values.get("connect_to") or ()),
        ip_version=values.get("ip_version"),
        http_version=values.get("http_version"),
        head=bool(values.get("head", False)),
        compressed=bool(values.get("compressed", False)),
        interface=values.get("interface"),
        local_port=ports[0] if ports else None,
        local_port_range=ports[1] if ports else 1,
        limit_rate=values.get("limit_rate"),
        path_as_is=bool(values.get("path_as_is", False)),
        proxy=values.get("proxy"),
        noproxy=values.get("noproxy"),
        get=bool(values.get("get", False)),
        byte_range=values.get("byte_range"),
        max_filesize=values.get("max_filesize"),
        speed_limit=values.get("speed_limit"),
        speed_time_s=values.get("speed_time"),
        tcp_fastopen=bool(values.get("tcp_fastopen", False)),
        keepalive=not values.get("no_keepalive", False),
        record_body=bool(values.get("record_body", False)),
    )


def _seconds(values: Mapping[str, Any], name: str, ms_name: str, flag: str) -> float | None:
    """A timeout given in seconds (curl's option) or milliseconds (pycurlb's
    ``*-ms`` option), never both."""
    seconds, ms = values.get(name), values.get(ms_name)
    if ms is None:
        return seconds  # type: ignore[no-any-return]
    if seconds is not None:
        raise UsageProbeError(f"give {flag} or {flag.split('/')[-1]}-ms, not both")
    return float(ms) / 1000.0


_DATA_FLAGS = {"d": "-d", "b": "--data-binary", "r": "--data-raw", "u": "--data-urlencode"}


def _data_item(kind: str, value: str, budget: int) -> bytes:
    """One -d/--data-* argument as the bytes curl would send (argv bytes as
    given; ``@FILE`` read within ``budget`` bytes)."""
    flag = _DATA_FLAGS[kind]
    if kind == "r" or (kind in "db" and not value.startswith("@")):
        return arg_bytes(value)
    if kind == "d":
        return read_at_file(value[1:], flag, budget).replace(b"\r", b"").replace(b"\n", b"")
    if kind == "b":
        return read_at_file(value[1:], flag, budget)
    # --data-urlencode: content | =content | name=content | @file | name@file
    name, eq, content = value.partition("=")
    if eq:
        return arg_bytes((f"{name}=" if name else "") + quote(arg_bytes(content), safe=""))
    name, at, path = value.partition("@")
    if at:
        # Percent-encoding triples a byte at most: read a third of what is left.
        raw = read_at_file(path, flag, budget // 3)
        return arg_bytes((f"{name}=" if name else "") + quote(raw, safe=""))
    return arg_bytes(quote(arg_bytes(value), safe=""))


def _headers(values: Sequence[str]) -> list[str]:
    """-H lines, ``@FILE`` read (one header per non-blank line), each checked."""
    out: list[str] = []
    for value in values:
        if value.startswith("@"):
            name = value[1:]
            text = os.fsdecode(read_at_file(name, "-H", MAX_HEADER_FILE_BYTES))
            for n, line in enumerate(text.split("\n"), 1):
                line = line.rstrip("\r")
                if line.strip():
                    check_header(line, f"-H @{name} line {n}")
                    out.append(line)
        else:
            check_header(value)
            out.append(value)
    return out
