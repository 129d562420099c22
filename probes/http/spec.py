"""What ``probetop http`` accepts: one declarative spec of its options.

Contract: ``SPEC`` is the supported curl options with curl's flags and
meanings, probetop's repeated-sampling and load options, and the known curl
options probetop does not implement (hidden; ``unsupported_flag`` finds one
in parsed values and ``unsupported_message`` refuses it, naming the option).
The CLI, the add-probe prompt and docs/http.md all read it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

from probetop.probes.core.options import (
    CommandSpec,
    Option,
    Spelling,
    Unsupported,
    byte_size,
    duration,
    whole_number,
)
from probetop.probes.http.inputs import local_ports, rate_limit, retry_number
from probetop.probes.http.load.settings import LOAD_OPTIONS
from probetop.probes.http.request import DEFAULT_MAX_REDIRS
from probetop.probes.record import KEEP_BODY_FLAG

DESCRIPTION = """\
Request URL(s) with libcurl and show where the time went: DNS, TCP connect,
TLS handshake, server (time to first byte after the request was sent) and
transfer, each to the microsecond, from libcurl's own clocks.

Without --count/--sample-interval/--watch: one request per URL and a waterfall
(with -L one row block per redirect hop, each with its own phases).
With them: repeated requests and per-phase min/p50/p90/p99/max/mean/stddev.

Options named like curl's behave like curl's. One deliberate difference:
--json is probetop's output switch (a pycurlb-compatible JSON document), not
curl's `--json <data>` body shortcut; send JSON bodies with
--data-binary '{...}' -H 'Content-Type: application/json'.
"""

EPILOG = """\
exit codes (one-off mode, curl's): 0 ok (an HTTP error status too, unless
-f: 22), 1 unsupported scheme, 2 usage, 3 malformed URL, 6 could not
resolve, 7 could not connect, 28 timeout, 35 TLS handshake, 47 too many
redirects, 52 empty reply, 56 receive failure, 60 certificate not trusted;
with several URLs, the last URL's. Repeated and load mode: 0, 1 (a probe
error), 99 (--assert), 128+N (signal N).

examples:
  probetop http https://example.com/
  probetop http -L -H 'Accept: text/html' http://127.0.0.1:8080/old
  probetop http --json -d 'a=1&b=2' http://127.0.0.1:8080/form
  probetop http -w '%{http_code} %{time_total}\\n' http://127.0.0.1:8080/
  probetop http --count 100 --sample-interval 0.2 http://127.0.0.1:8080/
  probetop http --watch --reuse URL1 URL2 URL3
"""

CURL = "curl options (same meaning as curl's)"
REPEATED = "repeated sampling (probetop)"

#: What -O puts among the -o values (curl pairs both with the URLs in order);
#: a NUL cannot come from a command line, so no file name is ever this.
REMOTE_NAME = "\0remote-name"


def remote_name(url: str) -> str:
    """curl 7.88's -O name: the URL path's last segment, as written (percent
    escapes kept; no query or fragment); "" when the path ends with /."""
    from urllib.parse import urlsplit

    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    return path.rsplit("/", 1)[-1]


# curl options probetop knows but does not do: (option strings, takes a value, why/instead).
_UNSUPPORTED: tuple[tuple[tuple[str, ...], bool, str], ...] = (
    (("-F", "--form", "--form-string"), True, "multipart forms are not supported"),
    (("-T", "--upload-file"), True, "uploads are not supported; use --data-binary @FILE"),
    (("-E", "--cert", "--key", "--cert-type", "--key-type"), True, "client certificates"),
    (("--ciphers", "--tls-max", "--curves", "--tls13-ciphers"), True, "TLS tuning"),
    (("--tlsv1", "--tlsv1.0", "--tlsv1.1", "--tlsv1.2", "--tlsv1.3"), False, "TLS tuning"),
    (("-C", "--continue-at"), True, "resuming a download"),
    (("-U", "--proxy-user", "--socks5", "--socks5-hostname"), True, "proxy auth"),
    (("-p", "--proxytunnel", "--proxy-insecure"), False, "proxy tuning"),
    (("--unix-socket", "--abstract-unix-socket"), True, "unix sockets"),
    (("--oauth2-bearer", "--aws-sigv4"), True, "use -H 'Authorization: ...'"),
    (("--digest", "--ntlm", "--negotiate", "--anyauth"), False, "only basic -u"),
    (("--pinnedpubkey", "--capath", "--crlfile", "--proto", "--proto-redir"), True, ""),
    (("--dns-servers", "--doh-url", "--happy-eyeballs-timeout-ms"), True, ""),
    (("-K", "--config", "-z", "--time-cond", "--trace", "--trace-ascii", "--stderr"), True, ""),
    (("--request-target", "--variable", "--netrc-file", "-Q", "--quote"), True, ""),
    (("--location-trusted", "--post301", "--post302", "--post303"), False, "redirect tuning"),
    (("-n", "--netrc", "-Z", "--parallel", "-R", "--remote-time"), False, ""),
    (("--http2-prior-knowledge", "--http3-only", "--http0.9"), False, "use --http2 / --http3"),
    (("-j", "--junk-session-cookies", "--raw", "--tr-encoding"), False, ""),
    # pycurlb's options probetop refuses (docs/http.md, "pycurlb's options").
    (
        ("-g", "--globoff"),
        False,
        "pycurlb's -g means --get and curl's means --globoff: probetop never globs URLs; "
        "for pycurlb's meaning write -G or --get",
    ),
    (
        ("--expect100-timeout", "--expect100-timeout-ms"),
        True,
        "Expect: 100-continue tuning; libcurl's default (1 s) applies",
    ),
    (("--ignore-content-length",), False, "the body is always read as the server framed it"),
    (("--trace-time",), False, "-v's lines carry no time stamps"),
    (("--fail-early",), False, "every URL is fetched; the exit status is the last one's"),
    (("--ssl-reqd",), False, "for FTP, IMAP, POP3, SMTP and LDAP; for HTTP give an https:// URL"),
    (("-V", "--version"), False, "use `probetop --version`"),
)
CURL_UNSUPPORTED = Unsupported("curl", "http", _UNSUPPORTED, dest="curl_unsupported", group=CURL)


def unsupported_flag(values: Mapping[str, Any]) -> str | None:
    """The unsupported curl option given in ``SPEC``'s parsed ``values``, as
    typed (the last one when several were), or None when none was."""
    return CURL_UNSUPPORTED.given(values)


def unsupported_message(flag: str) -> str:
    """What probetop says when a known curl option it does not implement is given."""
    return CURL_UNSUPPORTED.message(flag)


def _tagged(tag: str) -> Callable[[str], tuple[str, str]]:
    """An option value parser that keeps which option gave the value:
    ``-d a=1`` -> ``("d", "a=1")`` (curl joins -d/--data-* in command-line order)."""

    def data(text: str) -> tuple[str, str]:
        return (tag, text)

    return data


_ARGV_ORDER = itertools.count()


def _in_order(text: str) -> tuple[int, str]:
    """A URL or -H value with its place on the command line (argparse converts
    values in command-line order), so URLs that pycurlb's ``-H a b`` form put
    after a -H go back between the others in order (settings.py)."""
    return (next(_ARGV_ORDER), text)


_DATA_OPTIONS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("-d", "--data", "--data-ascii"), "d", "POST data, form-encoded (@FILE: strip newlines)"),
    (("--data-binary",), "b", "POST data as is (@FILE: raw bytes)"),
    (("--data-raw",), "r", "POST data; @ is not special"),
    (("--data-urlencode",), "u", "POST data, URL-encoded like curl ([name]=content, @FILE)"),
)

#: The family's name: its command, its probes' and records' kind.
KIND = "http"
#: Load mode's (--rate) probes and records.
LOAD_KIND = "http.load"

SPEC = CommandSpec(
    name=KIND,
    help="HTTP phase timings (DNS, TCP, TLS, server, transfer) like curl -w / httpstat",
    description=DESCRIPTION,
    epilog=EPILOG,
    options=(
        # "*": a URL may come after pycurlb's `-H a b` (spec: HEADER_NARGS); settings
        # takes back every -H value that is not a header and asks for one URL at least.
        Option(("urls",), "http:// or https:// URL(s)", _in_order, metavar="URL", nargs="*"),
        Option(("-X", "--request"), "request method", metavar="METHOD", dest="method", group=CURL),
        Option(
            ("-H", "--header"),
            "extra header 'Name: value' (repeatable; @FILE reads one per line; "
            "pycurlb's -H 'a: 1' 'b: 2' also works)",
            _in_order,
            metavar="LINE",
            action="append",
            dest="headers",
            nargs="+",
            group=CURL,
        ),
        *(
            Option(
                flags, text, _tagged(tag), metavar="DATA", action="append", dest="data", group=CURL
            )
            for flags, tag, text in _DATA_OPTIONS
        ),
        Option(
            ("-w", "--write-out"),
            "after each URL print FORMAT with curl's variables (%%{time_total}, "
            "%%{http_code}, %%{json} ...; @FILE, @-) instead of the waterfall",
            metavar="FORMAT",
            dest="write_out",
            group=CURL,
        ),
        Option(
            ("-f", "--fail"),
            "exit 22 when the final HTTP status is 400 or more (as curl; without it 0)",
            action="store_true",
            default=False,
            dest="fail",
            group=CURL,
        ),
        Option(
            ("--fail-with-body",),
            "as -f, but the error answer's body is written (stdout or -o), as curl's",
            action="store_true",
            default=False,
            dest="fail_with_body",
            group=CURL,
        ),
        Option(
            ("-i", "--include"),
            "curl's output mode, each response's header lines (every hop's with -L) "
            "written before its body, to stdout or -o, as curl's -i",
            action="store_true",
            default=False,
            dest="include",
            group=CURL,
        ),
        Option(
            ("-D", "--dump-header"),
            "curl's output mode, each response's header lines (every URL's, every "
            "hop's) written to FILE as received (- : stdout), as curl's -D",
            metavar="FILE",
            dest="dump_header",
            group=CURL,
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
        Option(("-m", "--max-time"), "timeout per request", duration(), metavar="S", group=CURL),
        Option(
            ("--max-time-ms",),
            "timeout per request in milliseconds (pycurlb's option)",
            duration(unit="ms"),
            metavar="MS",
            group=CURL,
        ),
        Option(("--connect-timeout",), "connect timeout", duration(), metavar="S", group=CURL),
        Option(
            ("--connect-timeout-ms",),
            "connect timeout in milliseconds (pycurlb's option)",
            duration(unit="ms"),
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
        Option(
            ("--local-port",),
            "connect from this local port, or the first free one of NUM-NUM",
            local_ports,
            metavar="NUM[-NUM]",
            group=CURL,
        ),
        Option(
            ("--limit-rate",),
            "at most SPEED bytes/s each way (K, M, G: 1024-based), as curl; the "
            "phases then measure the limited transfer",
            rate_limit,
            metavar="SPEED",
            group=CURL,
        ),
        Option(
            ("--retry",),
            "one-off: retry a transient failure (timeout, DNS, HTTP 408/429/500/502/503/504) "
            "up to N times, waiting 1 s, then 2, 4 ... (Retry-After if the server says), as curl",
            retry_number,
            metavar="N",
            group=CURL,
        ),
        Option(
            ("--retry-delay",),
            "with --retry: wait SECONDS (whole, as curl's) between attempts, no doubling",
            retry_number,
            metavar="SECONDS",
            group=CURL,
        ),
        Option(
            ("--retry-max-time",),
            "with --retry: no new attempt SECONDS (whole, as curl's) after the first began",
            retry_number,
            metavar="SECONDS",
            group=CURL,
        ),
        Option(
            ("--retry-connrefused",),
            "with --retry: a refused connection is transient too, as curl",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("--retry-all-errors",),
            "with --retry: retry on any error, as curl",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("--path-as-is",),
            "send the URL path as written (no squashing of /../ and /./)",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("--tcp-nodelay",),
            "TCP_NODELAY (on by default, as in curl since 7.50.2: accepted, changes nothing)",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("--url",),
            "a URL, as a positional one (repeatable; in order with them)",
            _in_order,
            metavar="URL",
            action="append",
            dest="url_options",
            group=CURL,
        ),
        Option(("-x", "--proxy"), "use this proxy", metavar="URL", group=CURL),
        Option(
            ("--noproxy",),
            "hosts to reach without a proxy (comma-separated; * for all), as curl",
            metavar="LIST",
            group=CURL,
        ),
        Option(
            ("-G", "--get"),
            "send the -d data as the URL's query, in a GET (HEAD with -I), as curl",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("-r", "--range"),
            "ask for these bytes only (Range: bytes=RANGE), as curl",
            metavar="RANGE",
            dest="byte_range",
            group=CURL,
        ),
        Option(
            ("--max-filesize",),
            "fail (exit 63) when the body is larger than BYTES (4k, 1M: 1024-based), as curl",
            byte_size(),
            metavar="BYTES",
            group=CURL,
        ),
        Option(
            ("-Y", "--speed-limit"),
            "fail (exit 28) when slower than SPEED bytes/s for -y seconds (30), as curl",
            whole_number(),
            metavar="SPEED",
            group=CURL,
        ),
        Option(
            ("-y", "--speed-time"),
            "the -Y window in whole seconds (alone: -Y 1), as curl",
            whole_number(),
            metavar="SECONDS",
            group=CURL,
        ),
        Option(
            ("--tcp-fastopen",),
            "TCP Fast Open (TFO) for the connection, as curl",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("-c", "--cookie-jar"),
            "write every cookie to FILE at the end, as curl (Netscape format; - is stdout; "
            "one-off)",
            metavar="FILE",
            group=CURL,
        ),
        Option(
            ("-N", "--no-buffer"),
            "write each piece of the body as it arrives (a flush per write), as curl -N",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("-v", "--verbose"),
            "the exchange on stderr as curl -v: * libcurl's notes, > request and < response "
            "headers, { [N bytes data] (one-off)",
            action="store_true",
            default=False,
            group=CURL,
        ),
        Option(
            ("--no-keepalive",),
            "no TCP keepalive probes (curl's default sends them after 60 s idle)",
            action="store_true",
            default=False,
            group=CURL,
        ),
        # curl's -s mutes its error messages, -S brings them back; there is
        # no progress meter here, so --no-progress-meter changes nothing.
        Option(
            ("-s", "--silent"),
            "no error messages on stderr (as curl -s; -S shows them again)",
            action="store_true",
            default=False,
            dest="curl_silent",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("-S", "--show-error"),
            "with -s: error messages on stderr again (as curl -S)",
            action="store_true",
            default=False,
            dest="curl_show_error",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("--no-progress-meter",),
            "accepted for pasted curl command lines; changes nothing",
            action="store_true",
            default=False,
            dest="curl_quiet",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("-o", "--output"),
            "write a URL's body to FILE as curl does (each -o goes with the next URL "
            "in order; - : stdout; /dev/null: discarded); no waterfall: stdout carries "
            "the other bodies and -w's output",
            metavar="FILE",
            action="append",
            dest="curl_output",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("-O", "--remote-name"),
            "write a URL's body to a file named as the URL's last path segment, in "
            "the current directory, as curl's -O (it takes its place among the -o's)",
            action="append_const",
            const=REMOTE_NAME,
            dest="curl_output",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("--create-dirs",),
            "create the directories an -o FILE names (mode 0750), as curl's --create-dirs",
            action="store_true",
            default=False,
            dest="create_dirs",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("-J", "--remote-header-name"),
            "with -O: name the file as the response's Content-Disposition filename= "
            "(path parts stripped; an existing file is not overwritten: exit 23), as curl's -J",
            action="store_true",
            default=False,
            dest="remote_header_name",
            group=CURL,
            hidden=True,
        ),
        Option(
            ("--output-dir",),
            "put the -o/-O files in DIR (DIR/FILE; with --create-dirs DIR is made too), "
            "as curl's --output-dir",
            metavar="DIR",
            dest="output_dir",
            group=CURL,
            hidden=True,
        ),
        *CURL_UNSUPPORTED.options(),
        *LOAD_OPTIONS,  # --rate, --connections (load/settings.py)
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
    # `probetop http -s URL -o f URL2 -o g -w ...`: URLs anywhere, as curl.
    positionals_anywhere=True,
    # curl options that change nothing here: a pasted curl line runs
    spellings=(
        Spelling("curl", "--basic", None, takes_value=False, note="-u is basic authentication"),
        Spelling("curl", "-#", None, takes_value=False, note="there is no progress meter"),
        Spelling("curl", "--progress-bar", None, takes_value=False, note="no progress meter"),
        Spelling("curl", "-q", None, takes_value=False, note="probetop reads no .curlrc"),
        Spelling("curl", "--disable", None, takes_value=False, note="probetop reads no .curlrc"),
    ),
)
