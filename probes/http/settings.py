"""The http family's options (one declarative spec) and its frozen settings.

Contract:
- ``SPEC`` is what ``probetop http`` accepts: the supported curl options with
  curl's flags and meanings, probetop's repeated-sampling options, and the
  known curl options probetop does not implement (hidden; refused with a
  message naming the option). The CLI, the add-probe prompt and docs/http.md
  all read it.
- ``HttpSettings`` is what one run (one-off or repeated) is made of: the URLs,
  the ``HttpRequest`` the curl options describe, and the sampling options.
  ``from_options`` builds it from parsed option values (reading ``@FILE``
  arguments as curl does) and validates it; ``validate`` raises
  ``UsageProbeError`` (exit 2) with a message that names the option.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import CommandSpec, Option, number, whole_number
from probetop.probes.http.inputs import (
    MAX_BODY_BYTES,
    MAX_HEADER_FILE_BYTES,
    arg_bytes,
    check_header,
    read_at_file,
)
from probetop.probes.http.load_settings import LOAD_OPTIONS, LoadSettings, load_from_options
from probetop.probes.http.request import DEFAULT_MAX_REDIRS, HttpRequest
from probetop.probes.record import KEEP_BODY_FLAG

DESCRIPTION = """\
Request URL(s) with libcurl and show where the time went: DNS, TCP connect,
TLS handshake, server (time to first byte after the request was sent) and
transfer, each to the microsecond, from libcurl's own clocks.

Without --count/--interval/--watch: one request per URL and a waterfall
(with -L one row block per redirect hop, each with its own phases).
With them: repeated requests and per-phase min/p50/p90/p99/max/mean/stddev.

Options named like curl's behave like curl's. One deliberate difference:
--json is probetop's output switch (a pycurlb-compatible JSON document), not
curl's `--json <data>` body shortcut; send JSON bodies with
--data-binary '{...}' -H 'Content-Type: application/json'.
"""

EPILOG = """\
exit codes (one-off mode): 0 ok, 2 usage, 3 malformed URL, 4 unsupported
scheme, 5 DNS failure, 6 connection refused, 7 timeout, 8 TLS failure,
9 HTTP 4xx, 10 HTTP 5xx, 11 too many redirects, 12 other transfer error.
(curl exits 0 on HTTP errors without -f; probetop tells them apart.)

examples:
  probetop http https://example.com/
  probetop http -L -H 'Accept: text/html' http://127.0.0.1:8080/old
  probetop http --json -d 'a=1&b=2' http://127.0.0.1:8080/form
  probetop http --count 100 --interval 0.2 http://127.0.0.1:8080/
  probetop http --watch --reuse URL1 URL2 URL3
"""

CURL = "curl options (same meaning as curl's)"
REPEATED = "repeated sampling (probetop)"

# curl options probetop knows but does not do: (option strings, takes a value, why/instead).
_UNSUPPORTED: tuple[tuple[tuple[str, ...], bool, str], ...] = (
    (("-w", "--write-out"), True, "every -w timing is in the waterfall; use --json for fields"),
    (("-v", "--verbose"), False, "the waterfall shows the exchange; use --json for every field"),
    (("-i", "--include"), False, "the status line is in the waterfall; bodies are not shown"),
    (("-f", "--fail", "--fail-with-body"), False, "HTTP errors already give exit codes 9/10"),
    (("-F", "--form", "--form-string"), True, "multipart forms are not supported"),
    (("-T", "--upload-file"), True, "uploads are not supported; use --data-binary @FILE"),
    (("-c", "--cookie-jar"), True, "cookies are not saved"),
    (("-D", "--dump-header"), True, "headers are not saved"),
    (("-O", "--remote-name", "-J", "--remote-header-name"), False, "bodies are discarded"),
    (("-G", "--get"), False, "put the query in the URL"),
    (("-E", "--cert", "--key", "--cert-type", "--key-type"), True, "client certificates"),
    (("--ciphers", "--tls-max", "--curves", "--tls13-ciphers"), True, "TLS tuning"),
    (("--tlsv1", "--tlsv1.0", "--tlsv1.1", "--tlsv1.2", "--tlsv1.3"), False, "TLS tuning"),
    (("-r", "--range", "-C", "--continue-at"), True, "ranges"),
    (("--limit-rate", "--max-filesize", "-Y", "--speed-limit", "-y", "--speed-time"), True, ""),
    (("--retry", "--retry-delay", "--retry-max-time"), True, "use --count for repetition"),
    (("-U", "--proxy-user", "--noproxy", "--socks5", "--socks5-hostname"), True, "proxy auth"),
    (("-p", "--proxytunnel", "--proxy-insecure"), False, "proxy tuning"),
    (("--unix-socket", "--abstract-unix-socket"), True, "unix sockets"),
    (("--oauth2-bearer", "--aws-sigv4"), True, "use -H 'Authorization: ...'"),
    (("--digest", "--ntlm", "--negotiate", "--anyauth", "--basic"), False, "only basic -u"),
    (("--pinnedpubkey", "--capath", "--crlfile", "--proto", "--proto-redir"), True, ""),
    (("--local-port", "--dns-servers", "--doh-url", "--happy-eyeballs-timeout-ms"), True, ""),
    (("-K", "--config", "-z", "--time-cond", "--trace", "--trace-ascii", "--stderr"), True, ""),
    (("--url", "--request-target", "--variable", "--netrc-file", "-Q", "--quote"), True, ""),
    (("--location-trusted", "--post301", "--post302", "--post303"), False, "redirect tuning"),
    (("-n", "--netrc", "-Z", "--parallel", "-N", "--no-buffer", "-R", "--remote-time"), False, ""),
    (("--http2-prior-knowledge", "--http3-only", "--http0.9"), False, "use --http2 / --http3"),
    (("--tcp-nodelay", "--tcp-fastopen", "--no-keepalive", "--path-as-is"), False, ""),
    (("-j", "--junk-session-cookies", "--raw", "--tr-encoding"), False, ""),
    # pycurlb's options probetop refuses (docs/http.md, "pycurlb's options").
    (
        ("-g", "--globoff"),
        False,
        "pycurlb's -g means --get and curl's means --globoff: probetop never globs URLs, "
        "and for a GET with a query put the query in the URL",
    ),
    (
        ("--expect100-timeout", "--expect100-timeout-ms"),
        True,
        "Expect: 100-continue tuning; libcurl's default (1 s) applies",
    ),
    (("--ignore-content-length",), False, "the body is always read as the server framed it"),
    (("-V", "--version"), False, "use `probetop --version`"),
)
# Why each unsupported option is refused (and what to do instead), by flag.
UNSUPPORTED_WHY: Mapping[str, str] = {
    flag: why for flags, _takes_value, why in _UNSUPPORTED for flag in flags
}
_UNSUPPORTED_DEST = "curl_unsupported"


def unsupported_message(flag: str) -> str:
    """What probetop says when a known curl option it does not implement is given."""
    why = UNSUPPORTED_WHY.get(flag, "")
    hint = f" ({why})" if why else ""
    return (
        f"curl option {flag} is not supported by probetop http{hint}; "
        "the supported subset is listed in docs/http.md and `probetop http --help`"
    )


def _tagged(tag: str) -> Callable[[str], tuple[str, str]]:
    """An option value parser that keeps which option gave the value:
    ``-d a=1`` -> ``("d", "a=1")`` (curl joins -d/--data-* in command-line order)."""

    def data(text: str) -> tuple[str, str]:
        return (tag, text)

    return data


def _named(flag: str) -> Callable[[str], str]:
    """The value of an unsupported option is dropped; its flag is kept (to refuse it)."""

    def unsupported(_text: str) -> str:
        return flag

    return unsupported


def _unsupported_options() -> tuple[Option, ...]:
    """One hidden option per flag, so the refusal names the flag as typed.
    Every one stores its flag in the same place; ``from_options`` refuses it."""
    return tuple(
        Option(
            (flag,),
            why,
            _named(flag) if takes_value else None,
            metavar="X" if takes_value else None,
            action="store" if takes_value else "store_const",
            const=None if takes_value else flag,
            dest=_UNSUPPORTED_DEST,
            group=CURL,
            hidden=True,
        )
        for flags, takes_value, why in _UNSUPPORTED
        for flag in flags
    )


_DATA_OPTIONS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("-d", "--data", "--data-ascii"), "d", "POST data, form-encoded (@FILE: strip newlines)"),
    (("--data-binary",), "b", "POST data as is (@FILE: raw bytes)"),
    (("--data-raw",), "r", "POST data; @ is not special"),
    (("--data-urlencode",), "u", "POST data, URL-encoded like curl ([name]=content, @FILE)"),
)

SPEC = CommandSpec(
    name="http",
    help="HTTP phase timings (DNS, TCP, TLS, server, transfer) like curl -w / httpstat",
    description=DESCRIPTION,
    epilog=EPILOG,
    options=(
        Option(("urls",), "http:// or https:// URL(s)", metavar="URL", nargs="+"),
        Option(("-X", "--request"), "request method", metavar="METHOD", dest="method", group=CURL),
        Option(
            ("-H", "--header"),
            "extra header 'Name: value' (repeatable; @FILE reads one per line)",
            metavar="LINE",
            action="append",
            dest="headers",
            group=CURL,
        ),
        *(
            Option(
                flags, text, _tagged(tag), metavar="DATA", action="append", dest="data", group=CURL
            )
            for flags, tag, text in _DATA_OPTIONS
        ),
        Option(("-u", "--user"), "basic authentication", metavar="USER:PASSWORD", group=CURL),
        Option(("-A", "--user-agent"), "User-Agent header", metavar="NAME", group=CURL),
        Option(("-e", "--referer"), "Referer header", metavar="URL", group=CURL),
        Option(
            ("-b", "--cookie"), "'n=v; n2=v2' or a cookie file", metavar="DATA|FILE", group=CURL
        ),
        Option(
            ("-k", "--insecure"),
            "skip TLS verification",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(("--cacert",), "CA bundle to verify the server with", metavar="FILE", group=CURL),
        Option(
            ("-L", "--location"), "follow redirects", action="store_true", default=False, group=CURL
        ),
        Option(
            ("--max-redirs",),
            f"with -L: at most N redirects (default {DEFAULT_MAX_REDIRS}; 0..1000)",
            whole_number(),
            None,
            "N",
            group=CURL,
        ),
        Option(("-m", "--max-time"), "timeout per request", number(), metavar="S", group=CURL),
        Option(
            ("--max-time-ms",),
            "timeout per request in milliseconds (pycurlb's option)",
            number(),
            metavar="MS",
            group=CURL,
        ),
        Option(("--connect-timeout",), "connect timeout", number(), metavar="S", group=CURL),
        Option(
            ("--connect-timeout-ms",),
            "connect timeout in milliseconds (pycurlb's option)",
            number(),
            metavar="MS",
            group=CURL,
        ),
        Option(
            ("--resolve",),
            "use ADDR for HOST:PORT, no DNS (repeatable)",
            metavar="HOST:PORT:ADDR",
            action="append",
            group=CURL,
        ),
        Option(
            ("--connect-to",),
            "connect to H2:P2 for requests to H1:P1 (repeatable)",
            metavar="H1:P1:H2:P2",
            action="append",
            group=CURL,
        ),
        Option(
            ("-4", "--ipv4"),
            "resolve names to IPv4 addresses only",
            action="store_const",
            const=4,
            dest="ip_version",
            group=CURL,
        ),
        Option(
            ("-6", "--ipv6"),
            "resolve names to IPv6 addresses only",
            action="store_const",
            const=6,
            dest="ip_version",
            group=CURL,
        ),
        *(
            Option(
                ("-0", "--http1.0") if version == "1.0" else (f"--http{version}",),
                f"use HTTP/{version}",
                action="store_const",
                const=version,
                dest="http_version",
                group=CURL,
            )
            for version in ("1.0", "1.1", "2", "3")
        ),
        Option(("-I", "--head"), "HEAD request", action="store_true", default=False, group=CURL),
        Option(
            ("--compressed",),
            "ask for a compressed body",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(("--interface",), "send from this interface/address", metavar="NAME", group=CURL),
        Option(("-x", "--proxy"), "use this proxy", metavar="URL", group=CURL),
        # Accepted for copy-pasted curl command lines; they change nothing here.
        Option(
            ("-s", "--silent", "-S", "--show-error", "--no-progress-meter"),
            "accepted for pasted curl command lines; changes nothing",
            action="store_true",
            default=False,
            dest="curl_quiet",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("-o", "--output"),
            "accepted as -o /dev/null only (bodies are discarded)",
            metavar="FILE",
            dest="curl_output",
            group=CURL,
            hidden=True,
        ),
        *_unsupported_options(),
        *LOAD_OPTIONS,  # --rate, --connections (load_settings.py)
        Option(
            (KEEP_BODY_FLAG,),
            "keep the request body (-d/--data*) in --json output and recordings; "
            "by default only its length and SHA-256 are kept",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("--count",),
            "N requests per URL, then a report",
            whole_number(),
            None,
            "N",
            group=REPEATED,
        ),
        Option(
            ("--watch",),
            "show the live dashboard pane",
            action="store_true",
            default=False,
            group=REPEATED,
        ),
        Option(
            ("--fresh",),
            "new connection, cold DNS for every request (default: what each curl run sees)",
            action="store_true",
            default=False,
            group=REPEATED,
        ),
        Option(
            ("--reuse",),
            "keep-alive: what a warm client sees",
            action="store_true",
            default=False,
            group=REPEATED,
        ),
        Option(
            ("--warmup",),
            "discard the first N requests per URL before any statistics (counted and shown "
            "as discarded; --count N then counts the N after them)",
            whole_number(0),
            None,
            "N",
            group=REPEATED,
        ),
        Option(
            ("--include-errors",),
            "latency statistics over 4xx/5xx responses too (default: 2xx/3xx only; "
            "transport errors never have timings)",
            action="store_true",
            default=False,
            group=REPEATED,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """What one ``probetop http`` run is made of.

    ``request`` is the same for every URL. ``interval_s`` and ``count``
    (requests per URL; None: until stopped or --time) drive repeated
    sampling; ``fresh`` is a new connection and a cold DNS cache per request
    (False: keep-alive, ``--reuse``); ``warmup`` requests per URL are
    discarded first; ``include_errors`` puts 4xx/5xx responses into the
    latency statistics (default: successes only). ``one_off`` is the default mode (one
    request per URL, a waterfall); ``watch`` asks for the dashboard.
    """

    urls: tuple[str, ...] = ()
    request: HttpRequest = field(default_factory=HttpRequest)
    interval_s: float = 1.0
    count: int | None = None
    fresh: bool = True
    watch: bool = False
    one_off: bool = False
    load: LoadSettings | None = None  # --rate: load mode (load_settings.py)
    warmup: int = 0  # --warmup: requests per URL discarded before statistics
    include_errors: bool = False  # --include-errors: 4xx/5xx in the latency statistics

    def __post_init__(self) -> None:
        if not isinstance(self.urls, tuple):
            object.__setattr__(self, "urls", tuple(self.urls))

    @property
    def connection(self) -> str:
        """``fresh`` or ``reuse``, as the report and the pane name it."""
        return "fresh" if self.fresh else "reuse"

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        *,
        interval_s: float = 1.0,
        interval_given: bool = False,
        time_s: float | None = None,
        recording: bool = False,
    ) -> HttpSettings:
        """Settings from parsed ``SPEC`` values plus the common options that
        choose the mode: any of --count, --watch, --interval (given, even as
        1), --time or --record means repeated sampling; --record alone
        records one request per URL. Validated; ``@FILE`` arguments are read
        here (UsageProbeError if they cannot be)."""
        _check_shapes(values)
        unsupported = values.get(_UNSUPPORTED_DEST)
        if unsupported:
            raise UsageProbeError(unsupported_message(str(unsupported)))
        output = values.get("curl_output")
        if output not in (None, "/dev/null"):
            raise UsageProbeError(
                "-o FILE is not supported: probetop discards the body "
                "(only -o /dev/null is accepted)"
            )
        if values.get("fresh") and values.get("reuse"):
            raise UsageProbeError("--fresh and --reuse contradict each other: give one of them")
        count = values.get("count")
        watch = bool(values.get("watch", False))
        # --time given (even --time 0: no time limit, as in every command) asks
        # for repeated sampling, like --count, --watch and --interval.
        timed = time_s is not None
        load = load_from_options(values, time_s=time_s, interval_s=interval_s)
        warmup = values.get("warmup")
        include_errors = bool(values.get("include_errors", False))
        if load is not None and (warmup is not None or include_errors):
            raise UsageProbeError(
                "--warmup and --include-errors are repeated-mode options; load mode "
                "(--rate) reports every status class on its own already (docs/http-load.md)"
            )
        repeated = count is not None or watch or interval_given or timed or recording or bool(load)
        if repeated and count is None and not (watch or timed or interval_given or load):
            count = 1  # `http URL --record f`: record the one request, not sample forever
        settings = cls(
            urls=tuple(values.get("urls") or ()),
            request=request_from_options(values),
            interval_s=float(interval_s),
            count=count,
            fresh=not values.get("reuse", False),
            watch=watch,
            one_off=not repeated,
            load=load,
            warmup=0 if warmup is None else int(warmup),
            include_errors=include_errors,
        )
        if settings.one_off and (warmup is not None or include_errors):
            raise UsageProbeError(
                "--warmup and --include-errors need repeated requests: add --count N "
                "or --interval S (one-off mode makes one request per URL)"
            )
        settings.validate()
        if values.get("max_redirs") is not None and not values.get("location"):
            raise UsageProbeError(
                "--max-redirs only matters with -L (without -L no redirect is followed); "
                "add -L or leave --max-redirs out"
            )
        return settings

    def validate(self) -> None:
        """Raise UsageProbeError for what curl would refuse or probetop cannot do."""
        request = self.request
        if not self.urls:
            raise UsageProbeError("give at least one URL")
        if request.head and request.data is not None:
            raise UsageProbeError("-I (HEAD) and -d (POST) contradict each other, as in curl")
        if request.user is not None and ":" not in request.user:
            raise UsageProbeError("give -u USER:PASSWORD (probetop does not prompt for passwords)")
        request.validate()
        if self.count is not None and self.count < 1:
            raise UsageProbeError(f"--count must be at least 1, got {self.count}")
        if not self.interval_s > 0:
            raise UsageProbeError("--interval must be positive")
        if self.warmup < 0:
            raise UsageProbeError(f"--warmup must be 0 or more, got {self.warmup}")


def _check_shapes(values: Mapping[str, Any]) -> None:
    """UsageProbeError for a value argparse gives in the wrong shape: it turns
    ``--opt=--`` into an empty list instead of the string ``--``."""
    for option in SPEC.options:
        if option.positional or option.action not in ("store", "append"):
            continue
        value = values.get(option.name)
        items = value if option.action == "append" and isinstance(value, list) else [value]
        if any(isinstance(item, list) for item in items):
            flag = "-d/--data*" if option.name == "data" else max(option.flags, key=len)
            raise UsageProbeError(f"{flag}: '--' is not a value here; give {option.display}")


# -- options -> HttpRequest ---------------------------------------------------
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
        proxy=values.get("proxy"),
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
