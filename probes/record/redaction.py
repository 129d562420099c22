"""Redaction of secrets before anything is written or printed as JSON.

Contract: ``redact(obj)`` returns a copy of a JSON-safe structure in which
- URL user-info passwords become ``***`` (``https://user:***@host/``),
- values of header lines ``Authorization``, ``Proxy-Authorization``,
  ``Cookie`` and ``Set-Cookie`` become ``***``,
- values under keys that name credentials (``password``, ``user``/``-u`` pairs,
  ``cookie``, ``proxy_user``) become ``***``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"
_SECRET_HEADERS = ("authorization", "proxy-authorization", "cookie", "set-cookie")
_SECRET_ARGV_FLAGS = {"-u", "--user", "-U", "--proxy-user", "-b", "--cookie"}
_SECRET_KEYS = {"password", "user", "userpwd", "proxy_user", "cookie", "cookies", "auth"}
# scheme://user:password@ anywhere in a string (also inside command lines).
_URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^:/\s@]*):[^/\s@]*@")


def redact_url(url: str) -> str:
    """Hide the password part of a URL's user-info; leave other URLs unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username}:{REDACTED}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact_header(line: str) -> str:
    """``Name: value`` with the value hidden when the name carries a secret."""
    name, sep, _value = line.partition(":")
    if sep and name.strip().lower() in _SECRET_HEADERS:
        return f"{name}: {REDACTED}"
    return line


def _redact_str(value: str) -> str:
    value = _URL_PASSWORD.sub(rf"\1:{REDACTED}@", value)
    if ":" in value and value.partition(":")[0].strip().lower() in _SECRET_HEADERS:
        return redact_header(value)
    return value


def redact(obj: Any) -> Any:
    """A redacted deep copy of a JSON-safe structure (see module docstring)."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            secret = isinstance(key, str) and key.lower() in (_SECRET_KEYS | set(_SECRET_HEADERS))
            if secret and value not in (None, ""):
                out[key] = REDACTED
            else:
                out[key] = redact(value)
        return out
    if isinstance(obj, (list, tuple)):
        out_list = [redact(v) for v in obj]
        # argv lists (the header's command): the value after -u/--user is user:password,
        # after -b/--cookie a cookie string.
        for i in range(1, len(out_list)):
            prev, value = obj[i - 1], obj[i]
            if isinstance(prev, str) and prev in _SECRET_ARGV_FLAGS and isinstance(value, str):
                name, sep, _pw = value.partition(":")
                out_list[i] = f"{name}:{REDACTED}" if sep else REDACTED
        return out_list
    if isinstance(obj, str):
        return _redact_str(obj)
    return obj
