"""Redaction: the one place that decides what never reaches a disk or a report.

Every line the recorder writes passes through ``redact`` (``codec.dump_line``),
and so do the http family's JSON documents and text reports. The rules are
structural -- by the *name* of a field, header, query parameter or option and
by the *shape* of a string -- never by matching known secret values, so a
secret nobody has seen before is hidden all the same.

Contract (docs/recording-format.md, "Secrets"):

- **Fields** (keys of a JSON object): a field named like a credential
  (``secret_field_name``: ``password``, ``user``, ``cookie``, ``auth``,
  ``token``, anything containing ``token``/``secret``/``passw``/``cookie``/
  ``credential``/``authoriz``/``apikey``/``signature``, or with a word
  ``key``/``auth``/``sig``/``pwd``/``session``/``jwt``) has every string under
  it replaced by ``***``. A field named like a request body (``data``,
  ``body``, ``postfields``, ``post_data``, ``request_body``, ``form``) keeps
  only the body's length and keyed hash (``body_digest``). A field whose name
  contains ``header`` holds header lines (rule below). The one exception is
  ``data_as_sent``, which the http family writes only when the user asked
  for it (``--record-body``): kept verbatim.
- **Header lines** ``Name: value``: the value becomes ``***`` when the name is
  ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` or
  contains ``key``, ``token``, ``secret``, ``auth``, ``passw``, ``cookie``,
  ``session``, ``credential`` or ``signature`` (case-insensitive).
- **URLs**, anywhere in any string: the whole user-info becomes ``***``
  (``https://***@host/``: with a token as the user name there is nothing
  else to keep), and the value of every query or fragment parameter named
  like a credential (``secret_param_name``: ``token``, ``key``, ``sig``,
  ``signature``, ``password``, ``secret``, ``auth``, ``code``, as a whole name
  or a word of it: ``access_token``, ``api_key``, ``X-Amz-Signature``,
  ``client_secret``, ``myToken``; ``key``, ``auth``, ``sig``, ``pwd`` also
  at the end of a word: ``apikey``) becomes ``***``. Also ``&name=value`` pairs outside
  a URL (a form body or cookie string that reached a free-text field).
- **Command lines** (a field named ``command``/``argv``, a list whose items
  look like options, or a string starting with ``curl``/``probetop``): the
  value of ``-u``/``--user`` and the other credential options becomes
  ``***``; ``-H`` values follow the header rule; ``-b`` cookie strings become
  ``***``; request bodies (``-d``,
  ``--data*``, ``-F``; curl's ``--json``) keep only length and keyed hash unless
  the same command line holds ``--record-body`` (the user's opt-in); URLs
  (also without a scheme: ``user:pw@host``) follow the URL rule. Attached
  values (``-ubob:pw``, ``--user=bob:pw``), grouped short options (``-sSu``)
  and abbreviated long options (``--us``, argparse accepts prefixes) count.
- Redaction is idempotent and never raises; everything that matches no rule
  is returned unchanged (a deep copy).

Limits (documented): a credential in a field, header, parameter or option
whose *name* does not look like one is not recognised. A body's hash is an
HMAC with a per-install key (kept 0600 in the private state directory), so
it tells bodies apart on this install; without the key no one can try
candidate bodies against it.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, unquote

REDACTED = "***"
# The opt-in that keeps request bodies (an http option; named here because a
# command line that holds it keeps its own body values).
KEEP_BODY_FLAG = "--record-body"

# -- names -------------------------------------------------------------------
_HEADER_EXACT = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_HEADER_PARTS = (
    "key",
    "token",
    "secret",
    "auth",
    "passw",
    "cookie",
    "session",
    "credential",
    "signature",
)
# Substrings that mark a credential wherever they appear in a field or parameter name.
_STRONG_PARTS = (
    "token",
    "secret",
    "passw",
    "cookie",
    "credential",
    "authoriz",
    "apikey",
    "api_key",
    "signature",
    "privatekey",
    "private_key",
)
# Whole words (of a name split at - _ . and camelCase) that mark a credential.
_WORDS = frozenset(
    {"key", "auth", "sig", "pwd", "session", "sessionid", "sid", "jwt", "otp", "bearer"}
)
# Words that also count at the end of a longer word (``apikey``, ``myauth``).
_SUFFIXES = ("key", "auth", "sig", "pwd", "session", "jwt")
# Query parameters only: OAuth's authorization ``code`` and ``pass`` (as JSON
# fields, ``http_code`` is a status and warmup's ``pass`` a read/write pass).
_PARAM_WORDS = _WORDS | {"code", "pass"}
_FIELD_EXACT = frozenset(
    {"user", "username", "userinfo", "userpwd", "proxy_user", "auth", "cookies", "set_cookie"}
)
_BODY_FIELDS = frozenset({"data", "body", "postfields", "post_data", "request_body", "form"})
# The user's opt-in (``--record-body``): the body as sent, kept verbatim.
_KEPT_FIELDS = frozenset({"data_as_sent"})
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(name: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(_CAMEL.sub("_", name).lower()) if w]


def secret_header_name(name: str) -> bool:
    """True for a header whose value is a credential (see the module docstring)."""
    low = name.strip().lower()
    return low in _HEADER_EXACT or any(part in low for part in _HEADER_PARTS)


def _named_secret(name: str, words: frozenset[str]) -> bool:
    """A strong part anywhere, or a word that is (or, run together with
    another word, ends in) one of ``words``: ``api_key``, ``apikey``,
    ``hmacKey``, ``basicauth`` (``monkey`` too: hiding a harmless value is
    the cheap mistake)."""
    low = name.lower()
    if any(part in low for part in _STRONG_PARTS):
        return True
    return any(w in words or w.endswith(_SUFFIXES) for w in _words(name))


def secret_param_name(name: str) -> bool:
    """True for a URL query/fragment parameter whose value is a credential."""
    return _named_secret(name, _PARAM_WORDS)


def secret_field_name(name: str) -> bool:
    """True for a JSON field whose (string) value is a credential."""
    return name.lower() in _FIELD_EXACT or _named_secret(name, _WORDS)


def body_field_name(name: str) -> bool:
    """True for a JSON field that holds a request body."""
    return name.lower() in _BODY_FIELDS


# What a field name means, cached: the same keys come back on every line.
_PLAIN, _SECRET, _BODY, _HEADERS, _KEPT, _ARGV = range(6)
# Fields that hold a command line (the recording header's ``command``).
_ARGV_FIELDS = frozenset({"command", "argv"})


# Least recently used names go: device keys come and go (see _UNCHANGED_CAP).
# Asked only for strings the set above does not hold; 512 entries (~120 KiB
# full) hold the strings in use when the set starts over.
@functools.lru_cache(maxsize=512)
def _field_kind(name: str) -> tuple[int, str]:
    """(kind, the name itself redacted): a key can be an URL label."""
    if name in _KEPT_FIELDS:
        kind = _KEPT
    elif name.lower() in _ARGV_FIELDS:
        kind = _ARGV
    elif secret_field_name(name):
        kind = _SECRET
    elif body_field_name(name):
        kind = _BODY
    elif "header" in name.lower():
        kind = _HEADERS
    else:
        kind = _PLAIN
    return kind, redact_text(name)


# -- bodies ------------------------------------------------------------------
# What body_digest writes (and, read back, leaves as it is): the length with a
# keyed hash, the length alone, or the unsalted SHA-256 of older recordings.
_DIGEST = re.compile(r"^<\d+ bytes(?:, (?:hmac-)?sha256:[0-9a-f]{64})?>$")
BodyKeyLoader = Callable[[], "bytes | None"]
_key_loader: BodyKeyLoader | None = None
_key: bytes | None = None
_key_loaded = False


def set_body_key_loader(loader: BodyKeyLoader | None) -> None:
    """Where ``body_digest`` gets its key: called once, at the first body
    (the application reads, or creates, its per-install secret; None when it
    cannot: bodies then keep their length only)."""
    global _key_loader, _key, _key_loaded
    _key_loader, _key, _key_loaded = loader, None, False


def _body_key() -> bytes | None:
    global _key, _key_loaded
    if not _key_loaded:
        _key_loaded = True
        try:
            _key = _key_loader() if _key_loader is not None else None
        except Exception:  # a key that cannot be had costs the hash, never the run
            _key = None
    return _key


def body_digest(data: bytes | str) -> str:
    """``<N bytes, hmac-sha256:HEX>``: what a recording keeps of a request
    body: its length and an HMAC-SHA256 keyed with a per-install secret
    (``set_body_key_loader``), which tells bodies apart on this install
    without letting anyone who reads the file try candidate bodies (an
    unsalted SHA-256 of ``password=hunter2`` is found in a dictionary).
    Without a key, ``<N bytes>``. A str is taken as the bytes it stands for
    (``os.fsencode`` rules: UTF-8, undecodable bytes as surrogate escapes);
    a digest is returned as is."""
    if isinstance(data, str):
        if _DIGEST.match(data):
            return data
        raw = data.encode("utf-8", "surrogateescape")
    else:
        raw = bytes(data)
    key = _body_key()
    if key is None:
        return f"<{len(raw)} bytes>"
    import hashlib  # here: OpenSSL's libcrypto costs a one-off `probetop http URL` 3 ms
    import hmac

    return f"<{len(raw)} bytes, hmac-sha256:{hmac.new(key, raw, hashlib.sha256).hexdigest()}>"


# -- URLs and free text --------------------------------------------------------
# scheme://user-info@ : the user-info runs to the last '@' before the path.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s\"'<>]*)@")
# name=value after ? # & ; (optionally followed by blanks, as in cookie strings).
_PARAM = re.compile(r"([?#&;]\s*)([^=&#;?\s\"'<>]+)=([^&#;\s\"'<>]*)")
# A string that starts as a form body or cookie string: ``name=value...``.
_FIRST_PAIR = re.compile(r"^\s*[^=&#;?\s\"'<>/:@]+=")
_HEADER_LINE = re.compile(r"^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:(.*)$", re.DOTALL)
_PORT_LIKE = re.compile(r"^\d{1,5}(?:[/?#]|$)")
_COMMAND_START = re.compile(r"^\s*(?:\S*/)?(curl|probetop)\s")
_TEXT_MARKS = frozenset("@?#&;:=")


_MAX_NESTING = 4  # URLs inside parameter values inside URLs ...


def _param(m: re.Match[str], depth: int) -> str:
    name, value = m.group(2), m.group(3)
    if value and value != REDACTED and secret_param_name(name):
        return f"{m.group(1)}{name}={REDACTED}"
    if depth < _MAX_NESTING and ("%" in value or "://" in value or "?" in value):
        # A URL inside a parameter (redirect_uri=https%3A%2F%2Fu%3Apw%40host...):
        # redact it decoded; if that changed anything, write it back encoded.
        decoded = unquote(value)
        redacted = _url_rules(decoded, depth + 1)
        if redacted != decoded:
            return f"{m.group(1)}{name}={quote(redacted, safe=':/*@')}"
    return m.group(0)


def _url_rules(text: str, depth: int = 0) -> str:
    if "://" in text and "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    if "=" in text:
        sub = functools.partial(_param, depth=depth)
        if _FIRST_PAIR.match(text):
            return _PARAM.sub(sub, "&" + text)[1:]
        text = _PARAM.sub(sub, text)
    return text


def redact_url(url: str) -> str:
    """A URL with its user-info and credential parameters hidden. Also a URL
    without a scheme, as curl takes them (``bob:pw@host/`` -> ``***@host/``)."""
    if not isinstance(url, str):
        return url
    if "://" not in url and "@" in url:
        authority = re.split(r"[/?#]", url, maxsplit=1)[0]
        if "@" in authority:
            url = REDACTED + url[authority.rindex("@") :]
    return _url_rules(url)


def redact_header(line: str) -> str:
    """``Name: value`` with the value hidden when the name marks a credential;
    any other line with its URLs redacted."""
    if not isinstance(line, str):
        return line
    m = _HEADER_LINE.match(line)
    if m and m.group(2).strip() not in ("", REDACTED) and secret_header_name(m.group(1)):
        return f"{m.group(1)}: {REDACTED}"
    return _url_rules(line)


def redact_text(text: str) -> str:
    """Free text: URL rules everywhere; a whole string that is a header line
    with a credential name loses its value (unless what follows the colon is
    a port or ``//``: ``keyserver:8080/x`` is a host, not a header); a string
    that is a ``curl``/``probetop`` command line is redacted as one."""
    if not isinstance(text, str) or _TEXT_MARKS.isdisjoint(text):
        return text
    if _COMMAND_START.match(text):
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = []
        if argv:
            redacted = redact_argv(argv)
            return shlex.join(redacted) if redacted != argv else text
    m = _HEADER_LINE.match(text)
    if m and secret_header_name(m.group(1)) and "\n" not in text:
        value = m.group(2).strip()
        host_like = value.startswith("//") or _PORT_LIKE.match(m.group(2))
        if value not in ("", REDACTED) and not host_like:
            return f"{m.group(1)}: {REDACTED}"
    return _url_rules(text)


# A header line as typed, however malformed: the name, then a colon or blanks.
_LOOSE_HEADER = re.compile(r"^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)([ \t]*:|[ \t]+)(.*)$", re.DOTALL)


def redact_shown(value: str) -> str:
    """A value quoted back to the user in a message (an error about it):
    ``redact_text``'s rules, and a header line whose name marks a credential
    loses its value however malformed the line is: with no colon
    (``Authorization Bearer x``, a typo the error is about) or with CR/LF or
    another control character in it (``$(cat token)`` of a file with a
    Windows line end), which ``redact_text`` leaves to the URL rules. The
    header's name stays, so the message still says which one."""
    if not isinstance(value, str):
        return value
    m = _LOOSE_HEADER.match(value)
    if m and secret_header_name(m.group(1)) and m.group(3).strip() not in ("", REDACTED):
        sep = ":" if ":" in m.group(2) else ""
        rest = m.group(3).lstrip(" \t")
        if not (sep and (rest.startswith("//") or _PORT_LIKE.match(rest))):  # keyserver:8080/x
            return f"{m.group(1)}{sep} {REDACTED}"
    return redact_text(value)


# -- command lines -------------------------------------------------------------
def _credential(value: str, _keep: bool) -> str:
    return REDACTED if value else value


def _cookie(value: str, _keep: bool) -> str:
    # curl: with '=' it is the cookie data, without it a cookie file's name.
    return REDACTED if "=" in value else value


def _body(value: str, keep: bool) -> str:
    if keep or value.startswith("@"):  # @FILE names a file; its content is not here
        return value
    return body_digest(value)


def _form(value: str, keep: bool) -> str:
    name, eq, content = value.partition("=")
    if keep or not eq or content.startswith(("@", "<")):
        return value
    return f"{name}={body_digest(content)}"


def _header(value: str, _keep: bool) -> str:
    return redact_header(value)


def _url(value: str, _keep: bool) -> str:
    return redact_url(value)


_Rule = Callable[[str, bool], str]
# Strictest first: an abbreviation that matches several takes the first kind.
_RULE_ORDER: tuple[_Rule, ...] = (_credential, _body, _form, _cookie, _header, _url)
_FLAG_RULES: dict[str, _Rule] = {
    **dict.fromkeys(
        (
            "-u",
            "--user",
            "-U",
            "--proxy-user",
            "--oauth2-bearer",
            "--pass",
            "--proxy-pass",
            "-E",
            "--cert",
            "--proxy-cert",
            "--tlspassword",
            "--tlsuser",
            "--proxy-tlspassword",
            "--proxy-tlsuser",
            "--password",
            "--token",
        ),
        _credential,
    ),
    **dict.fromkeys(
        ("-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode"),
        _body,
    ),
    **dict.fromkeys(("-F", "--form", "--form-string"), _form),
    **dict.fromkeys(("-b", "--cookie"), _cookie),
    **dict.fromkeys(("-H", "--header", "--proxy-header"), _header),
    **dict.fromkeys(("-x", "--proxy", "-e", "--referer", "--url", "--preproxy"), _url),
}
# curl's --json <data> is a body; probetop's --json is an output switch with no value.
_CURL_ONLY_RULES: dict[str, _Rule] = {"--json": _body}
_SHORT_RULES = {flag[1]: rule for flag, rule in _FLAG_RULES.items() if len(flag) == 2}
_LONG_FLAGS = [flag for flag in _FLAG_RULES if flag.startswith("--")]


def _long_rule(flag: str, curl: bool) -> _Rule | None:
    """The rule of a long option as typed: exact, else the strictest option it
    abbreviates (argparse accepts unique prefixes)."""
    table = {**_FLAG_RULES, **_CURL_ONLY_RULES} if curl else _FLAG_RULES
    if flag in table:
        return table[flag]
    if len(flag) < 4:
        return None
    matches = {table[f] for f in table if f.startswith("--") and f.startswith(flag)}
    return next((rule for rule in _RULE_ORDER if rule in matches), None)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line (``sys.argv``-like) with credentials and bodies hidden."""
    args = list(argv)
    curl = bool(args) and isinstance(args[0], str) and args[0].rsplit("/", 1)[-1] == "curl"
    keep = KEEP_BODY_FLAG in args
    out: list[Any] = []
    pending: _Rule | None = None
    options_done = False
    for arg in args:
        if not isinstance(arg, str):
            out.append(redact(arg))
            pending = None
            continue
        if pending is not None:
            out.append(pending(arg, keep))
            pending = None
            continue
        if options_done or not arg.startswith("-") or arg == "-":
            out.append(redact_url(arg))
            continue
        if arg == "--":
            options_done = True
            out.append(arg)
            continue
        if arg.startswith("--"):
            flag, eq, value = arg.partition("=")
            rule = _long_rule(flag, curl)
            if rule is None:
                out.append(f"{flag}={redact_text(value)}" if eq else arg)
            elif eq:
                out.append(f"{flag}={rule(value, keep)}")
            else:
                out.append(arg)
                pending = rule
            continue
        # -X, -Xvalue, or grouped short flags (-sSu value / -sSuvalue).
        for i in range(1, len(arg)):
            rule = _SHORT_RULES.get(arg[i])
            if rule is not None:
                rest = arg[i + 1 :]
                if rest:
                    out.append(arg[: i + 1] + rule(rest, keep))
                else:
                    out.append(arg)
                    pending = rule
                break
        else:
            out.append(arg)
    return out


def _looks_like_argv(items: Sequence[Any]) -> bool:
    return any(isinstance(v, str) and v.startswith("-") and len(v) > 1 for v in items)


def _blank(value: Any) -> Any:
    """Every string under a credential field becomes ``***`` (numbers stay)."""
    if isinstance(value, str):
        return REDACTED if value else value
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_blank(v) for v in value]
    return value


def _bodies(value: Any) -> Any:
    if isinstance(value, str):
        return body_digest(value)
    if isinstance(value, (list, tuple)):
        return [_bodies(v) for v in value]
    return redact(value)


def _headers(value: Any) -> Any:
    if isinstance(value, str):
        return redact_header(value)
    if isinstance(value, (list, tuple)):
        return [_headers(v) for v in value]
    return redact(value)


def redact(obj: Any) -> Any:
    """A redacted deep copy of a JSON-safe structure (see the module docstring)."""
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                out[key] = redact(value)
                continue
            kind, name = _field_kind(key)
            if kind == _PLAIN:
                out[name] = redact(value)
            elif kind == _SECRET:
                out[name] = _blank(value)
            elif kind == _BODY:
                out[name] = _bodies(value)
            elif kind == _HEADERS:
                out[name] = _headers(value)
            elif kind == _ARGV and isinstance(value, (list, tuple)):
                out[name] = redact_argv(value)
            elif kind == _ARGV:
                out[name] = redact(value)
            else:
                out[name] = value if isinstance(value, str) else redact(value)
        return out
    if isinstance(obj, (list, tuple)):
        if _looks_like_argv(obj):
            return redact_argv(obj)
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


# -- the recorder's fast path ----------------------------------------------------
# Strings (as UTF-8 bytes) known to pass every rule unchanged, as a key and as
# a value: the same few hundred names, ids and units come back on every line.
_UNCHANGED: set[bytes] = set()
# Past this many the set starts over (the names of the lines in use come back
# within a line or two): keys name devices (``rx_pps@veth3f2a``), and a host
# whose interfaces come and go all day brings new ones for ever. Kept until a
# cap of 65,536 it grew a soak with device churn for days (issue 29). The cap is
# also what the set can add to a long run once it has started: it fills at the
# rate new devices bring new strings (~19 a device, about one a second at the
# soak's default churn: 4,096 took an hour, past a soak's 10-minute mark), so
# it is little above the demo's ~370 strings in use in any 10 s: 1,024 (~80
# KiB with its table) fills in about 15 minutes at that churn.
_UNCHANGED_CAP = 1024


def _string_unchanged(raw: bytes) -> bool:
    """True when no rule touches this string, wherever it stands: as a key
    it is a plain field whose name stays; as a value ``redact_text`` keeps
    it; it cannot make a list look like a command line (``-x``)."""
    text = raw.decode("utf-8", "surrogateescape")
    if text.startswith("-") and len(text) > 1:
        return False
    return _field_kind(text) == (_PLAIN, text) and redact_text(text) == text


def unchanged_by_redaction(strings: list[bytes]) -> bool:
    """True when ``redact`` returns a structure unchanged because every key
    and string value in it (``strings``, as found in its JSON text) is
    ``_string_unchanged``: no field is named like a credential, body,
    header or command line, no string holds a URL secret, no list looks
    like a command line. Numbers, booleans and null are never redacted."""
    known = _UNCHANGED
    if known.issuperset(strings):
        return True
    for raw in strings:
        if raw in known:
            continue
        if not _string_unchanged(raw):
            return False
        if len(known) >= _UNCHANGED_CAP:
            known.clear()
        known.add(raw)
    return True
