"""``probetop http URL... [curl options]``: HTTP phase timings.

One-off (the default): one request per URL, a waterfall on stdout (or, with
``--json``, one pycurlb-compatible JSON document) and an exit code per error
kind (``http_transfer.EXIT_CODES``). Repeated (``--count``, ``--interval``,
``--watch``, ``--time`` or ``--record``): ``run`` returns None and the generic
path runs ``HttpProbe``; ``--watch`` opens the dashboard, otherwise the run is
headless and ``report`` prints per-phase statistics.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any
from urllib.parse import quote

from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.http.request import HttpRequest
from probetop.tui.argtypes import number, whole_number

NAME = "http"
HELP = "HTTP phase timings (DNS, TCP, TLS, server, transfer) like curl -w / httpstat"
FOCUS = "http"
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

# curl options probetop knows but does not do: (option strings, takes a value, why/instead).
_UNSUPPORTED: list[tuple[tuple[str, ...], bool, str]] = [
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
    (("-g", "--globoff", "-j", "--junk-session-cookies", "--raw", "--tr-encoding"), False, ""),
]


class _Unsupported(argparse.Action):
    """A known curl option probetop does not implement: say so instead of guessing."""

    def __init__(self, *args: Any, why: str = "", **kwargs: Any) -> None:
        self.why = why
        super().__init__(*args, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        hint = f" ({self.why})" if self.why else ""
        raise argparse.ArgumentError(
            self,
            f"curl option {option} is not supported by probetop http{hint}; "
            "the supported subset is listed in docs/http.md and `probetop http --help`",
        )


class _Data(argparse.Action):
    """-d / --data-* in command-line order, as (kind, value) pairs (curl joins them)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        items = list(getattr(namespace, "curl_data", None) or [])
        items.append((self.const, values))
        namespace.curl_data = items


def _mark_interval_given(parser: argparse.ArgumentParser) -> None:
    """Make the common --interval (added by cli.py after us) also set interval_given.

    --interval switches to repeated mode, but its default (1 s) cannot tell
    "not given" from "given as 1", so the action records that it ran.
    """
    original = parser._add_action

    def add_action(action: argparse.Action) -> argparse.Action:
        if "--interval" in action.option_strings:
            store = type(action)

            class Marked(store):  # type: ignore[valid-type, misc]
                def __call__(self, p: Any, ns: Any, values: Any, option: Any = None) -> None:
                    ns.interval_given = True
                    super().__call__(p, ns, values, option)

            action.__class__ = Marked
        return original(action)

    parser._add_action = add_action  # type: ignore[method-assign, assignment]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL", help="http:// or https:// URL(s)")
    curl = parser.add_argument_group("curl options (same meaning as curl's)")
    curl.add_argument("-X", "--request", dest="method", metavar="METHOD", help="request method")
    curl.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        default=[],
        metavar="LINE",
        help="extra header 'Name: value' (repeatable; @FILE reads one per line)",
    )
    data_options: list[tuple[tuple[str, ...], str, str]] = [
        (("-d", "--data", "--data-ascii"), "d", "POST data, form-encoded (@FILE: strip newlines)"),
        (("--data-binary",), "b", "POST data as is (@FILE: raw bytes)"),
        (("--data-raw",), "r", "POST data; @ is not special"),
        (("--data-urlencode",), "u", "POST data, URL-encoded like curl ([name]=content, @FILE)"),
    ]
    for flags, kind, text in data_options:
        curl.add_argument(*flags, action=_Data, const=kind, metavar="DATA", help=text)
    curl.add_argument("-u", "--user", metavar="USER:PASSWORD", help="basic authentication")
    curl.add_argument("-A", "--user-agent", metavar="NAME", help="User-Agent header")
    curl.add_argument("-e", "--referer", metavar="URL", help="Referer header")
    curl.add_argument("-b", "--cookie", metavar="DATA|FILE", help="'n=v; n2=v2' or a cookie file")
    curl.add_argument("-k", "--insecure", action="store_true", help="skip TLS verification")
    curl.add_argument("--cacert", metavar="FILE", help="CA bundle to verify the server with")
    curl.add_argument("-L", "--location", action="store_true", help="follow redirects")
    curl.add_argument(
        "--max-redirs", type=whole_number(), default=50, metavar="N", help="(default 50)"
    )
    curl.add_argument("-m", "--max-time", type=number(), metavar="S", help="timeout per request")
    curl.add_argument("--connect-timeout", type=number(), metavar="S", help="connect timeout")
    curl.add_argument("--resolve", action="append", default=[], metavar="HOST:PORT:ADDR")
    curl.add_argument("--connect-to", action="append", default=[], metavar="H1:P1:H2:P2")
    curl.add_argument("-4", "--ipv4", dest="ip_version", action="store_const", const=4)
    curl.add_argument("-6", "--ipv6", dest="ip_version", action="store_const", const=6)
    for version in ("1.0", "1.1", "2", "3"):
        curl.add_argument(
            f"--http{version}", dest="http_version", action="store_const", const=version
        )
    curl.add_argument("-I", "--head", action="store_true", help="HEAD request")
    curl.add_argument("--compressed", action="store_true", help="ask for a compressed body")
    curl.add_argument("--interface", metavar="NAME", help="send from this interface/address")
    curl.add_argument("-x", "--proxy", metavar="URL", help="use this proxy")
    # Accepted for copy-pasted curl command lines; they change nothing here.
    curl.add_argument(
        "-s",
        "--silent",
        "-S",
        "--show-error",
        "--no-progress-meter",
        action="store_true",
        dest="curl_quiet",
        help=argparse.SUPPRESS,
    )
    curl.add_argument("-o", "--output", metavar="FILE", dest="curl_output", help=argparse.SUPPRESS)
    for unsupported, takes_value, why in _UNSUPPORTED:
        curl.add_argument(
            *unsupported,
            action=_Unsupported,
            why=why,
            nargs=1 if takes_value else 0,
            dest=argparse.SUPPRESS,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
        )
    rep = parser.add_argument_group("repeated sampling (probetop)")
    rep.add_argument(
        "--count", type=whole_number(), metavar="N", help="N requests per URL, then a report"
    )
    rep.add_argument("--watch", action="store_true", help="show the live dashboard pane")
    conn = rep.add_mutually_exclusive_group()
    conn.add_argument(
        "--fresh",
        dest="reuse",
        action="store_false",
        help="new connection, cold DNS for every request (default: what each curl run sees)",
    )
    conn.add_argument(
        "--reuse", dest="reuse", action="store_true", help="keep-alive: what a warm client sees"
    )
    parser.set_defaults(reuse=False, curl_data=None, interval_given=False)
    _mark_interval_given(parser)


# -- options -> HttpRequest ---------------------------------------------------
def _read_at_file(name: str) -> bytes:
    try:
        if name == "-":
            return sys.stdin.buffer.read()
        with open(name, "rb") as f:
            return f.read()
    except OSError as exc:
        raise UsageProbeError(f"cannot read {name}: {exc.strerror}") from None


def _data_item(kind: str, value: str) -> str:
    """One -d/--data-* argument as the bytes curl would send (latin-1 text)."""
    if kind == "r" or (kind in "db" and not value.startswith("@")):
        return value
    if kind == "d":
        return _read_at_file(value[1:]).replace(b"\r", b"").replace(b"\n", b"").decode("latin-1")
    if kind == "b":
        return _read_at_file(value[1:]).decode("latin-1")
    # --data-urlencode: content | =content | name=content | @file | name@file
    name, eq, content = value.partition("=")
    if eq:
        return (f"{name}=" if name else "") + quote(content, safe="")
    name, at, path = value.partition("@")
    if at:
        data = _read_at_file(path)
        return (f"{name}=" if name else "") + quote(data, safe="")
    return quote(value, safe="")


def _headers(values: list[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value.startswith("@"):
            text = _read_at_file(value[1:]).decode("latin-1")
            out += [line.rstrip("\r") for line in text.splitlines() if line.strip()]
        else:
            out.append(value)
    return out


def build_request(args: argparse.Namespace) -> HttpRequest:
    """The HttpRequest the options describe; UsageProbeError on contradictions."""
    data_items = getattr(args, "curl_data", None) or []
    data = "&".join(_data_item(k, v) for k, v in data_items) if data_items else None
    if args.head and data is not None:
        raise UsageProbeError("-I (HEAD) and -d (POST) contradict each other, as in curl")
    if args.user is not None and ":" not in args.user:
        raise UsageProbeError("give -u USER:PASSWORD (probetop does not prompt for passwords)")
    if args.curl_output not in (None, "/dev/null"):
        raise UsageProbeError(
            "-o FILE is not supported: probetop discards the body (only -o /dev/null is accepted)"
        )
    for name in ("max_time", "connect_timeout"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise UsageProbeError(f"--{name.replace('_', '-')} must be positive")
    if args.max_redirs < 0:
        raise UsageProbeError("--max-redirs must be 0 or more")
    return HttpRequest(
        method=args.method,
        headers=_headers(args.headers),
        data=data,
        user=args.user,
        user_agent=args.user_agent,
        referer=args.referer,
        cookie=args.cookie,
        insecure=args.insecure,
        cacert=args.cacert,
        follow=args.location,
        max_redirs=args.max_redirs,
        timeout_s=args.max_time,
        connect_timeout_s=args.connect_timeout,
        resolve=list(args.resolve),
        connect_to=list(args.connect_to),
        ip_version=args.ip_version,
        http_version=args.http_version,
        head=args.head,
        compressed=args.compressed,
        interface=args.interface,
        proxy=args.proxy,
    )


def repeated(args: argparse.Namespace) -> bool:
    """Repeated mode: any option that asks for more than one request per URL."""
    return bool(
        args.count is not None
        or args.watch
        or getattr(args, "interval_given", False)
        or getattr(args, "interval", 1.0) != 1.0  # given before the command name
        or getattr(args, "time", None)
        or getattr(args, "record", None)
    )


# -- the command contract ---------------------------------------------------------
def run(args: argparse.Namespace) -> int | None:
    if repeated(args):
        only_record = args.count is None and not args.watch and not getattr(args, "time", None)
        if only_record and not getattr(args, "interval_given", False):
            # `http URL --record f`: record the one request, not sample forever.
            args.count = 1
        if not args.watch:
            args.headless = True  # a report, not a dashboard, unless --watch asks for one
        return None
    from probetop.probes.http.request import HttpUrlError, check_http_version, check_url
    from probetop.probes.http.transfer import fetch, pycurlb_document
    from probetop.probes.http.waterfall import render_exchange, use_colour

    request = build_request(args)
    check_http_version(request.http_version)
    docs: list[dict[str, Any]] = []
    code = 0
    colour = use_colour(sys.stdout)
    for i, raw in enumerate(args.urls):
        try:
            url = check_url(raw)
        except HttpUrlError as exc:
            print(f"probetop: error: {exc}", file=sys.stderr)
            code = code or exc.exit_code
            continue
        exchange = fetch(request, url)
        if args.json:
            docs.append(pycurlb_document(exchange))
        else:
            if i:
                sys.stdout.write("\n")
            sys.stdout.write(render_exchange(exchange, colour=colour))
        message = exchange.message()
        if message:
            print(f"probetop: error: {message}", file=sys.stderr)
        code = code or exchange.exit_code
    if args.json and docs:
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    sys.stdout.flush()
    return code


def build_probes(args: argparse.Namespace) -> list[Probe]:
    from probetop.probes.http.probe import HttpProbe

    if args.count is not None and args.count < 1:
        raise UsageProbeError(f"--count must be at least 1, got {args.count}")
    return [
        HttpProbe(
            list(args.urls),
            build_request(args),
            interval_s=float(args.interval),
            count=args.count,
            fresh=not args.reuse,
        )
    ]


def demo_probes(ctx: Any) -> list[Probe]:
    """Two local URLs on the demo server: a 20 ms wait and a 100 kB body."""
    from probetop.probes.http.probe import HttpProbe

    base = ctx.http_url
    return [HttpProbe([f"{base}/delay?ms=20", f"{base}/bytes?n=100000"], interval_s=1.0)]


def report(args: argparse.Namespace, result: Any) -> int:
    """Per URL and phase: min, p50, p90, p99, max, mean, stddev; errors by kind."""
    from probetop.probes.http.waterfall import render_report
    from probetop.probes.record.redact import redact

    summaries = {pid: s for pid, s in result.summaries.items() if "urls" in s}
    if args.json:
        doc = {
            "duration_s": round(result.duration_s, 3),
            "reason": result.reason,
            "probes": redact(summaries),
            "errors": result.errors,
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        sys.stdout.write(render_report(summaries, result.duration_s, result.reason, colour))
        for pid, err in result.errors.items():
            print(f"probetop: error: {pid}: {err}", file=sys.stderr)
    return 1 if result.errors else 0
