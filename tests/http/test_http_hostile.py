"""Hostile input to `probetop http`: a one-line message and an exit code, never a
traceback, memory bounded (issue 11, class 4).

Two kinds of proof:
- a table of real hostile cases, each run as the real CLI in a process of its
  own against real local servers (tests/http/http_fixtures.py): the exit code,
  the one message line, no traceback, the child's peak memory, and where it
  matters what the server really received;
- property-based tests (hypothesis) feeding generated URLs, option values and
  bodies to the URL/header/data handling and to the whole CLI in-process.

Nothing leaves loopback: every generated request is pinned to the local server
with --connect-to, and the proxy environment is cleared.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import string
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from forkserver import zygote
from http_fixtures import LocalServer, RawServer
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from probetop.probes.core.base import UsageProbeError
from probetop.probes.http import HttpRequest, HttpUrlError, check_url
from probetop.probes.http.request import configure, curl_command
from probetop.probes.record import redact
from probetop.tui.cli.parser import build_parser, make_plan
from probetop.tui.main import main

MAX_RSS_MB = 300  # a probetop process with pycurl loaded is ~60-90 MB
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")
ENV = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}


@dataclass
class Run:
    code: int
    out: bytes
    err: str
    maxrss_mb: float


# The child reports its own peak RSS (VmHWM) at exit. ru_maxrss from wait4
# would not do: Linux carries the forking process's high-water mark into the
# child across exec, so a pytest process grown past the limit made every
# child look that big.
PEAK_WRAPPER = (
    "import os, sys\nfrom probetop.tui.main import main\ncode = 2\n"
    "try:\n    code = main(sys.argv[1:])\n"
    "finally:\n"
    "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
    "    with open(os.environ['PROBETOP_PEAK_FILE'], 'w') as f:\n"
    "        f.write(hwm.split()[1])\n"
    "sys.exit(code)"
)


def run_cli(
    args: Sequence[str | bytes], stdin: Any = subprocess.DEVNULL, *, fork: bool = False
) -> Run:
    """`probetop http ARGS` in a child process: exit code, output and the
    child's own peak RSS (its VmHWM). ``fork``: the child is forked from an
    interpreter that has imported the CLI already (tests/forkserver.py), not
    started from scratch."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile() as peak,
    ):
        env = {**ENV, "PROBETOP_PEAK_FILE": peak.name}
        if fork:
            code = zygote("probetop.tui.main", "probetop.probes.http", "pycurl").run(
                PEAK_WRAPPER, ["http", *args], stdin=stdin, stdout=out, stderr=err, env=env
            )
        else:
            cmd = [sys.executable, "-c", PEAK_WRAPPER, "http", *args]
            code = subprocess.run(cmd, stdin=stdin, stdout=out, stderr=err, env=env).returncode
        out.seek(0)
        err.seek(0)
        text = Path(peak.name).read_text().strip()
        return Run(
            code,
            out.read(),
            err.read().decode("utf-8", "replace"),
            int(text) / 1024 if text else float("nan"),  # kB
        )


def assert_clean(run: Run, code: int, words: str | None, *, usage: bool = False) -> None:
    """Exit ``code``; on failure exactly one message line containing ``words``
    (argparse's own errors: its usage lines, then one message line); never a
    traceback; memory bounded."""
    assert "Traceback" not in run.err, run.err
    assert run.code == code, (run.code, run.err)
    lines = run.err.splitlines()
    if code == 0:
        assert run.err == "", run.err
    elif usage:
        assert lines and lines[-1].startswith("probetop http: error:"), run.err
    else:
        assert len(lines) == 1, run.err
        assert lines[0].startswith("probetop: error: "), run.err
        assert len(lines[0]) < 600, len(lines[0])
    if words is not None:
        assert words in run.err, (words, run.err)
    assert run.maxrss_mb < MAX_RSS_MB, run.maxrss_mb


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    (d / "bad-headers").write_text("X-Ok: 1\nno colon here\n")
    (d / "headers").write_text("X-From-File: yes\r\n\r\nX-Second: 2\n")
    (d / "body").write_bytes(b"a=1\r\nb=2\n")
    return d


@dataclass
class Case:
    """One hostile command line: ``{url}`` is the local server's base URL,
    ``{port}`` its port, ``{dir}`` a directory with test files."""

    name: str
    args: list[str | bytes]
    code: int
    words: str | None = None
    usage: bool = False  # argparse refuses it (usage block + one message line)
    check: Callable[[LocalServer], None] | None = None
    stdin: str | None = None


def saw_line(line: str) -> Callable[[LocalServer], None]:
    def check(server: LocalServer) -> None:
        assert server.seen[-1]["line"] == line, server.seen[-1]

    return check


def saw_header(header: str, present: bool = True) -> Callable[[LocalServer], None]:
    """The last request had (or had not) this header line; ``{port}`` filled in."""

    def check(server: LocalServer) -> None:
        wanted = header.replace("{port}", str(server.port))
        assert (wanted in server.seen[-1]["headers"]) is present, server.seen[-1]

    return check


def saw_body(body: bytes) -> Callable[[LocalServer], None]:
    def check(server: LocalServer) -> None:
        assert server.seen[-1]["body"] == body, server.seen[-1]

    return check


def saw_methods(*lines: str) -> Callable[[LocalServer], None]:
    def check(server: LocalServer) -> None:
        got = [r["line"] for r in list(server.seen)[-len(lines) :]]
        assert got == list(lines), got

    return check


PIN = ["--connect-to", "::127.0.0.1:{port}"]  # every host -> the local server
CASES = [
    # -- URLs ------------------------------------------------------------------
    Case("non-ASCII path and query (UTF-8, percent-encoded as curl does)",
         ["{url}/é?q=ü"], 0, check=saw_line("GET /%C3%A9?q=%C3%BC HTTP/1.1")),
    Case("IDN host -> punycode Host header (curl + libidn2)",
         ["http://bücher.example:{port}/echo", *PIN], 0,
         check=saw_header("Host: xn--bcher-kva.example:{port}")),
    Case("IDN host with sharp s (UTS 46 non-transitional, as libidn2)",
         ["http://straße.de:{port}/", *PIN], 0, check=saw_header("Host: xn--strae-oqa.de:{port}")),
    Case("IDN with ideographic full stop and capitals",
         ["http://BÜCHER。example:{port}/", *PIN], 0,
         check=saw_header("Host: xn--bcher-kva.example:{port}")),
    Case("IDN label over 63 bytes", ["http://é" + "x" * 70 + ".example/"], 3, "malformed URL"),
    Case("argv bytes that are not UTF-8, in the path", [b"http://127.0.0.1:{port}/\xff\xfe"], 0,
         check=saw_line("GET /%FF%FE HTTP/1.1")),
    Case("argv bytes that are not UTF-8, in the host", [b"http://\xff\xfe/"], 3, "not valid UTF-8"),
    Case("space in the URL", ["{url}/a b"], 3, "white space"),
    Case("tab in the URL", ["{url}/a\tb"], 3, "control character"),
    Case("line feed in the URL", ["{url}/a\nGET /b"], 3, "control character"),
    Case("escape character in the URL", ["{url}/\x1b[2J"], 3, "control character"),
    Case("DEL in the URL", ["{url}/\x7f"], 3, "control character"),
    Case("port above 65535", ["http://127.0.0.1:65536/"], 3, "port"),
    Case("port 99999999999999999999", ["http://127.0.0.1:99999999999999999999/"], 3, "port"),
    Case("negative port", ["http://127.0.0.1:-1/"], 3, "port"),
    Case("port with letters", ["http://127.0.0.1:8o/"], 3, "port"),
    Case("full-width digits as port", ["http://127.0.0.1:８０/"], 3, "port"),
    Case("port 0", ["http://127.0.0.1:0/"], 7, "refused error"),
    Case("IPv6 literal", ["http://[::1]:{port}/", *PIN], 0),
    Case("IPv6 literal with a zone id", ["http://[fe80::1%25lo]:{port}/", *PIN], 0),
    Case("unclosed IPv6 bracket", ["http://[::1/"], 3, "unclosed"),
    Case("not an IPv6 address in brackets", ["http://[zz]/"], 3, "not an IPv6"),
    Case("text after the IPv6 bracket", ["http://[::1]x/"], 3, "after ']'"),
    Case("bracket in a host name", ["http://a]b/"], 3, "IPv6"),
    Case("no host", ["http://"], 3, "no host name"),
    Case("no host, a path", ["http:///x"], 3, "no host name"),
    Case("empty URL", [""], 3, "no host name"),
    Case("ftp scheme", ["ftp://127.0.0.1/"], 1, "unsupported scheme"),
    Case("file scheme", ["file:///etc/passwd"], 1, "unsupported scheme"),
    Case("gopher scheme", ["gopher://127.0.0.1:70/"], 1, "unsupported scheme"),
    Case("javascript: pseudo-URL", ["javascript:alert(1)"], 3, "port"),
    Case("non-ASCII scheme", ["é://x/"], 3, "scheme"),
    Case("scheme starting with a digit", ["1http://x/"], 3, "scheme"),
    Case("upper-case scheme", ["HTTP://127.0.0.1:{port}/"], 0),
    Case("no scheme (curl guesses http)", ["127.0.0.1:{port}/echo"], 0),
    Case("'@' inside the user-info", ["http://a@b:c@127.0.0.1:{port}/"], 0),
    Case("non-ASCII password, -f", ["http://bob:pä@127.0.0.1:{port}/auth", "-f"], 22, "401"),
    Case("100 000-character path (server says 414), -f", ["{url}/" + "a" * 100_000, "-f"], 22,
         "414"),
    Case("300-character host name", ["http://" + "a" * 300 + ":{port}/", *PIN], 0),
    Case("several URLs, the bad one reported, the last one's code (curl)",
         ["{url}/", "{url}/", "http://[::1"], 3, "unclosed"),
    # -- headers -----------------------------------------------------------------
    Case("-H with CR/LF (header injection)", ["{url}/", "-H", "X: a\r\nInjected: b"], 2, "CR/LF"),
    Case("-H with a bare LF", ["{url}/", "-H", "X: a\nY: b"], 2, "CR/LF"),
    Case("-H with an escape character", ["{url}/", "-H", "X: \x1b[31m"], 2, "control character"),
    Case("-H without a colon (curl ignores it silently)", ["{url}/", "-H", "NoColon"], 2,
         "no colon"),
    Case("-H empty", ["{url}/", "-H", ""], 2, "no colon"),
    Case("-H with an empty name", ["{url}/", "-H", ": x"], 2, "not a header name"),
    Case("-H with a space in the name", ["{url}/", "-H", "Bad Name: x"], 2, "not a header name"),
    Case("-H 'X;' sends an empty header (curl)", ["{url}/", "-H", "X;"], 0,
         check=saw_header("X: ")),
    Case("-H 'Accept:' removes a header (curl)", ["{url}/", "-H", "Accept:"], 0,
         check=saw_header("Accept: */*", present=False)),
    Case("-H with a non-ASCII value (UTF-8 bytes, as curl)", ["{url}/", "-H", "X: é"], 0,
         check=saw_header("X: Ã©")),
    Case("-H with argv bytes that are not UTF-8", ["{url}/", "-H", b"X: \xff"], 0,
         check=saw_header("X: ÿ")),
    Case("-H @file", ["{url}/", "-H", "@{dir}/headers"], 0, check=saw_header("X-Second: 2")),
    Case("-H @file with a line without a colon", ["{url}/", "-H", "@{dir}/bad-headers"], 2,
         "line 2"),
    Case("-H @missing", ["{url}/", "-H", "@{dir}/missing"], 2, "cannot read"),
    Case("-H @directory", ["{url}/", "-H", "@{dir}"], 2, "Is a directory"),
    Case("-H @/dev/zero (endless)", ["{url}/", "-H", "@/dev/zero"], 2, "more than 1 MiB"),
    Case("-X with a request line", ["{url}/", "-X", "GET /x HTTP/1.1\r\nHost: y"], 2, "method"),
    Case("-X with a space", ["{url}/", "-X", "GET /x"], 2, "method"),
    Case("-X empty", ["{url}/", "-X", ""], 2, "method"),
    Case("-X PATCH", ["{url}/", "-X", "PATCH"], 0, check=saw_line("PATCH / HTTP/1.1")),
    Case("-A with CR/LF", ["{url}/", "-A", "a\r\nB: c"], 2, "CR/LF"),
    Case("-e with a line feed", ["{url}/", "-e", "x\ny"], 2, "CR/LF"),
    Case("-b cookie string with CR/LF", ["{url}/", "-b", "a=1\r\nX: y"], 2, "CR/LF"),
    Case("-b cookie file /dev/zero", ["{url}/", "-b", "/dev/zero"], 2, "not a regular file"),
    Case("-b cookie file missing (curl: silently none)", ["{url}/", "-b", "{dir}/nope"], 2,
         "No such file"),
    Case("-b cookie file is a directory", ["{url}/", "-b", "{dir}"], 2, "directory"),
    Case("-u without a password", ["{url}/", "-u", "bob"], 2, "USER:PASSWORD"),
    Case("-u non-ASCII, -f", ["{url}/auth", "-u", "bob:pässword", "-f"], 22, "401"),
    Case("-u right", ["{url}/auth", "-u", "bob:s3cret"], 0),
    # -- bodies -----------------------------------------------------------------
    Case("-d non-ASCII (UTF-8 bytes, as curl)", ["{url}/", "-d", "€"], 0,
         check=saw_body("€".encode())),
    Case("-d argv bytes that are not UTF-8", ["{url}/", "-d", b"\xff"], 0,
         check=saw_body(b"\xff")),
    Case("-d @file strips CR/LF (curl)", ["{url}/", "-d", "@{dir}/body"], 0,
         check=saw_body(b"a=1b=2")),
    Case("--data-binary @file keeps them", ["{url}/", "--data-binary", "@{dir}/body"], 0,
         check=saw_body(b"a=1\r\nb=2\n")),
    Case("--data-urlencode of non-ASCII", ["{url}/", "--data-urlencode", "q=é &"], 0,
         check=saw_body(b"q=%C3%A9%20%26")),
    Case("-d @missing", ["{url}/", "-d", "@{dir}/missing"], 2, "cannot read"),
    Case("-d @directory", ["{url}/", "-d", "@{dir}"], 2, "Is a directory"),
    Case("-d @/dev/zero (endless)", ["{url}/", "-d", "@/dev/zero"], 2, "more than 16 MiB"),
    Case("--data-binary @/dev/zero", ["{url}/", "--data-binary", "@/dev/zero"], 2, "more than"),
    Case("--data-urlencode name@/dev/zero", ["{url}/", "--data-urlencode", "a@/dev/zero"], 2,
         "more than"),
    Case("-d @- with a terminal on stdin (the dashboard's own)", ["{url}/", "-d", "@-"], 2,
         "standard input is a terminal", stdin="pty"),
    Case("-d @- with /dev/zero on stdin", ["{url}/", "-d", "@-"], 2, "more than 16 MiB",
         stdin="/dev/zero"),
    Case("two -d @/dev/urandom share one budget",
         ["{url}/", "-d", "@/dev/urandom", "-d", "@/dev/urandom"], 2, "more than"),
    Case("-I with -d", ["{url}/", "-I", "-d", "a=1"], 2, "contradict"),
    # -- numbers and option combinations -------------------------------------------
    Case("--max-time nan", ["{url}/", "--max-time", "nan"], 2, "not a duration", usage=True),
    Case("--max-time inf", ["{url}/", "--max-time", "inf"], 2, "not a duration", usage=True),
    Case("--max-time 1e400", ["{url}/", "--max-time", "1e400"], 2, "finite", usage=True),
    Case("--max-time 1e300", ["{url}/", "--max-time", "1e300"], 2, "at most"),
    Case("--max-time 0", ["{url}/", "-m", "0"], 2, "must be positive"),
    Case("--connect-timeout -1", ["{url}/", "--connect-timeout=-1"], 2, "zero or a positive",
         usage=True),
    Case("--max-time tiny works", ["{url}/delay?ms=200", "-m", "1e-300"], 28, "timeout error"),
    Case("--max-redirs without -L (meaningless)", ["{url}/", "--max-redirs", "5"], 2,
         "only matters with -L"),
    # curl spells no limit --max-redirs -1; here it reaches the option's own check.
    Case("--max-redirs=-1 (curl: unlimited)", ["{url}/", "-L", "--max-redirs=-1"], 2,
         "0 or more"),
    Case("--max-redirs 10^20", ["{url}/", "-L", "--max-redirs", "1" + "0" * 20], 2, "at most"),
    Case("--max-redirs 1e20", ["{url}/", "-L", "--max-redirs", "1e20"], 2, "whole", usage=True),
    Case("-L --max-redirs 0 on a redirect (as curl: error)",
         ["{url}/redirect?n=1", "-L", "--max-redirs", "0"], 47, "Maximum (0)"),
    Case("-L -I: HEAD on every hop (as curl)", ["{url}/redirect?n=2", "-L", "-I"], 0,
         check=saw_methods("HEAD /redirect?n=2 HTTP/1.1",
                           "HEAD /redirect?n=1&code=302&to=/echo HTTP/1.1", "HEAD /echo HTTP/1.1")),
    Case("--count 0", ["{url}/", "--count", "0"], 2, "at least 1"),
    Case("--count 1e20", ["{url}/", "--count", "1e20"], 2, "whole", usage=True),
    Case("--count 10^20 bounded by --time", ["{url}/", "--count", "1" + "0" * 20, "--time", "0.5"],
         0),
    Case("--interval 0", ["{url}/", "--interval", "0"], 2, "positive", usage=True),
    Case("--interval nan", ["{url}/", "--interval", "nan"], 2, "not a duration", usage=True),
    Case("--time nan", ["{url}/", "--time", "nan"], 2, "not a duration", usage=True),
    Case("--time=-1", ["{url}/", "--time=-1"], 2, "zero or a positive", usage=True),
    Case("--fresh with --reuse", ["{url}/", "--fresh", "--reuse"], 2, "contradict"),
    # -- host-bearing options ---------------------------------------------------------
    Case("--resolve without the form", ["{url}/", "--resolve", "bad"], 2, "HOST:PORT:ADDR"),
    Case("--resolve with a bad port", ["{url}/", "--resolve", "h:99999:1.2.3.4"], 2, "port"),
    Case("--resolve with a name for an address", ["{url}/", "--resolve", "h:80:example.com"], 2,
         "address"),
    Case("--resolve an IDN host", ["http://bücher.example:{port}/",
                                   "--resolve", "bücher.example:{port}:127.0.0.1"], 0,
         check=saw_header("Host: xn--bcher-kva.example:{port}")),
    Case("--connect-to without the form", ["{url}/", "--connect-to", "x"], 2, "HOST1:PORT1"),
    Case("--connect-to with CR/LF", ["{url}/", "--connect-to", "a:1:\r\n:2"], 2, "CR/LF"),
    Case("-x with a bad scheme", ["{url}/", "-x", "é://"], 2, "scheme"),
    Case("-x with a space", ["{url}/", "-x", "http://a b:1"], 2, "white space"),
    Case("-x to a closed port", ["{url}/", "-x", "http://127.0.0.1:1"], 7, "proxy"),
    Case("--interface with a control character", ["{url}/", "--interface", "a\x01"], 2,
         "control character"),
    Case("--cacert /dev/zero", ["{url}/", "--cacert", "/dev/zero"], 2, "not a regular file"),
    Case("--cacert missing", ["{url}/", "--cacert", "{dir}/nope.pem"], 2, "No such file"),
    Case("--cacert directory", ["{url}/", "--cacert", "{dir}"], 2, "directory"),
    # -sS: curl's "Failed to open the file" warning line comes before the error without -s
    Case("-o FILE in no directory", ["{url}/", "-sS", "-o", "{dir}/nodir/out"], 23,
         "Failure writing output"),
    Case("-F (unsupported)", ["{url}/", "-F", "a=b"], 2, "not supported"),
    # -- repeated mode gets the same checks ------------------------------------------
    Case("repeated: header injection", ["{url}/", "--count", "1", "-H", "X: a\r\nY: b"], 2,
         "CR/LF"),
    Case("repeated: bad URL", ["http://[::1", "--count", "1"], 3, "unclosed"),
    Case("repeated: IDN, non-ASCII header and body", ["http://bücher.example:{port}/", *PIN,
                                                       "--count", "1", "-H", "X: é", "-d", "€"], 0,
         check=saw_header("Host: xn--bcher-kva.example:{port}")),
]  # fmt: skip


def _fill(arg: str | bytes, server: LocalServer, files: Path) -> str | bytes:
    if isinstance(arg, bytes):
        return arg.replace(b"{port}", str(server.port).encode())
    return (
        arg.replace("{url}", server.url)
        .replace("{port}", str(server.port))
        .replace("{dir}", str(files))
    )


# The first case of each exit code starts a whole `python -c` of its own; the
# rest are forked from one that has imported the CLI (the same process
# boundary, exit status and peak memory, without 0.2-0.3 CPU-s of imports each).
_STARTED_WHOLE = {next(c.name for c in CASES if c.code == code) for code in {c.code for c in CASES}}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case(case: Case, server: LocalServer, files: Path) -> None:
    args = [_fill(a, server, files) for a in case.args]
    stdin: Any = subprocess.DEVNULL
    with contextlib.ExitStack() as stack:
        if case.stdin == "pty":
            master, stdin = os.openpty()
            stack.callback(os.close, master)
            stack.callback(os.close, stdin)
        elif case.stdin:
            stdin = stack.enter_context(open(case.stdin, "rb"))
        run = run_cli(args, stdin=stdin, fork=case.name not in _STARTED_WHOLE)
    assert_clean(run, case.code, case.words, usage=case.usage)
    if case.check is not None:
        case.check(server)


def test_the_table_covers_every_class_of_value():
    """The count docs/reliability-http.md quotes, and every exit code it names."""
    assert len(CASES) >= 100
    assert {c.code for c in CASES} >= {0, 1, 2, 3, 7, 22, 28, 47}


# curl's hostname_check list (lib/urlapi.c).
CURL_BAD_HOST_CHARACTERS = set("/:#?!@{}[]\\$'\"^`*<>=;,+&()")


def _host_check(where: str, host: str) -> Callable[[], object]:
    """The check of ``host`` in a URL, a --resolve or a --connect-to value."""
    if where == "url":
        return lambda: check_url(f"http://{host}/")
    if where == "--resolve":
        return HttpRequest(resolve=(f"{host}:80:127.0.0.1",)).validate
    return HttpRequest(connect_to=(f"{host}:80:127.0.0.1:80",)).validate


@pytest.mark.parametrize("where", ["url", "--resolve", "--connect-to"])
def test_a_host_name_character_is_refused_exactly_as_curl_refuses_it(where: str) -> None:
    """Every ASCII character in a host name: refused when curl's list has it,
    or it is a control character, a space or DEL; taken otherwise ('%' only
    as %XX). (Non-ASCII goes to punycode first.) In a URL the host ends at
    '/', '?' and '#' and the user-info at '@'; ':' starts the port."""
    refusal = HttpUrlError if where == "url" else UsageProbeError
    for code in range(0x80):
        c = chr(code)
        if c == ":" or (where == "url" and c in "/?#@"):
            continue  # another part of the value
        refused = c in CURL_BAD_HOST_CHARACTERS or code <= 0x20 or code == 0x7F or c == "%"
        try:
            _host_check(where, f"a{c}b")()
        except refusal:
            assert refused, f"{where}: {c!r} refused"
        else:
            assert not refused, f"{where}: {c!r} taken"


# -- a hostile server ----------------------------------------------------------------
# name: (reply, curl's exit code from the wheel's libcurl 8.23: the same as curl
# 7.88's except the 300 kB header (7.88: 27 out of memory; libcurl >= 8.6: 100
# CURLE_TOO_LARGE) and the status 99999 (7.88: 1; 8.23 takes it)).
HOSTILE_REPLIES = {
    "garbage instead of HTTP": (b"hello\r\n", 1),
    "escape sequences in the status line and a non-UTF-8 Content-Type": (
        b"HTTP/1.1 200 \x1b[2J OK\r\nContent-Type: text/\xff\x1b]0;pwn\x07\r\n"
        b"Content-Length: 0\r\n\r\n",
        0,
    ),
    "a 300 kB header line": (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 300_000 + b"\r\n\r\n", 100),
    "a non-UTF-8 Location, looping": (
        b"HTTP/1.1 302 Found\r\nLocation: /\xff\xfe?token=abc\r\nContent-Length: 0\r\n\r\n",
        47,
    ),
    "a Location to file://": (
        b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n",
        1,
    ),
    "a Location to gopher://": (
        b"HTTP/1.1 302 Found\r\nLocation: gopher://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n",
        1,
    ),
    "a status code of 99999": (b"HTTP/1.1 99999 Odd\r\nContent-Length: 0\r\n\r\n", 0),
    "a body cut short": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", 18),
}


@pytest.mark.parametrize("name", list(HOSTILE_REPLIES))
def test_hostile_server(name: str) -> None:
    reply, code = HOSTILE_REPLIES[name]
    with RawServer(reply) as raw:
        for mode in ([], ["--json"], ["--count", "2", "--sample-interval", "0.05"]):
            args = [*mode, "-L", "--max-redirs", "3", "-m", "5", f"{raw.url}/"]
            run = run_cli(args, fork=bool(mode))  # the plain run a whole process
            # Repeated mode is curl in a loop: counted, reported, then every
            # request failed, so curl's code for the failure (0 for a response).
            assert_clean(run, code, None)
            # What a server sends never reaches the terminal raw (ESC, BEL).
            assert b"\x1b" not in run.out and b"\x07" not in run.out, run.out[:300]
            if mode == ["--json"]:
                doc = json.loads(run.out)
                assert "token=abc" not in json.dumps(doc)


# -- generated input (hypothesis) -------------------------------------------------------
# Any text: every plane, surrogates, NUL and control characters included.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=80)
ARGV_TEXT = st.binary(max_size=60).map(os.fsdecode)  # what a shell can pass, as Python sees it
URL_PIECES = st.sampled_from(
    ["http://", "https://", "HTTP://", "ftp://", "", "//", "http:", "[", "]", "@", ":", "%", "?",
     "#", "/", ".", "..", "::1", "[::1]", "127.0.0.1", "xn--", "ß", "é", "ü", "。", "\x00", "\n",
     " ", "\t", "\x7f", "\u200d", "\udcff", ":65536", ":0", ":-1", "user:pw@", "a" * 70]
)  # fmt: skip
URLISH = st.lists(st.one_of(URL_PIECES, ANY_TEXT, ARGV_TEXT), max_size=6).map("".join)
# PROBETOP_HYPOTHESIS_EXAMPLES=20000 for a long run; failures print their example.
EXAMPLES = int(os.environ.get("PROBETOP_HYPOTHESIS_EXAMPLES", "400"))
FAST = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@FAST
@given(URLISH)
def test_any_url_is_an_ascii_url_or_a_url_error(text: str) -> None:
    try:
        url = check_url(text)
    except HttpUrlError as exc:
        event(f"refused: exit {exc.exit_code}")
        assert exc.exit_code in (3, 1)
        message = str(exc)
        assert "\n" not in message and len(message) < 400
        return
    event("accepted")
    assert url.isascii() and url == url.strip()
    assert not any(c in url for c in " \t\r\n\x00\x7f")
    parts = urlsplit(url)
    assert parts.scheme.lower() in ("http", "https") and parts.hostname
    _ = parts.port  # never raises on what check_url gives


VALUE_OPTIONS = ["-H", "-X", "-A", "-e", "-u", "-b", "--resolve", "--connect-to", "--interface",
                 "-x", "-d", "--data-binary", "--data-raw", "--data-urlencode", "--max-time",
                 "--connect-timeout", "--max-redirs", "--count", "--cacert"]  # fmt: skip


@pytest.fixture(scope="module")
def curl_handle():
    import pycurl

    handle = pycurl.Curl()
    yield handle
    handle.close()


@FAST
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from(VALUE_OPTIONS), st.one_of(ANY_TEXT, ARGV_TEXT, URLISH)),
        min_size=1,
        max_size=4,
    )
)
def test_any_option_value_is_taken_or_refused_with_a_message(
    pairs: list[tuple[str, str]], curl_handle: Any
) -> None:
    argv = ["http"]
    for flag, value in pairs:
        argv.append(f"{flag}={value}" if flag.startswith("--") else flag)
        if not flag.startswith("--"):
            argv.append(value)
    argv += ["-L", "http://127.0.0.1:1/"]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            plan = make_plan(build_parser().parse_args(argv))
    except SystemExit as exc:  # argparse: usage + one message line
        assert exc.code == 2 and "error:" in err.getvalue().splitlines()[-1]
        return
    except UsageProbeError as exc:
        assert exc.exit_code == 2 and "\n" not in str(exc), str(exc)
        return
    request = plan.settings.request
    # What was accepted goes to libcurl as it is, and shows up redacted.
    curl_handle.reset()
    configure(curl_handle, request, check_url(plan.settings.urls[0]))
    json.dumps(redact(request.redacted()))
    curl_command(request, "http://127.0.0.1:1/")


@pytest.fixture
def no_proxy(monkeypatch):
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)


HEADERISH = st.one_of(
    ANY_TEXT,
    st.tuples(st.text(string.ascii_letters + "-", min_size=1, max_size=10), ANY_TEXT).map(
        lambda t: f"{t[0]}: {t[1]}"
    ),
)


@settings(FAST, max_examples=max(20, EXAMPLES * 3 // 8))
@given(
    url=URLISH,
    path=st.one_of(st.just(""), ANY_TEXT),
    headers=st.lists(HEADERISH, max_size=2),
    data=st.one_of(st.none(), ANY_TEXT),
    as_json=st.booleans(),
)
def test_the_whole_cli_on_generated_input(
    server: LocalServer, no_proxy: None, capsys: Any, url: str, path: str,
    headers: list[str], data: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Generated URLs (half of them on the local server with a generated path),
    headers and bodies through the real entry point: an exit code from the
    documented set, one message line, output that parses."""
    target = url if path == "" else f"{server.url}/{path}"
    argv = ["http", "-m", "5", "--connect-to", f"::127.0.0.1:{server.port}"]
    argv += ["--json"] if as_json else []
    for header in headers:
        argv += [f"--header={header}"]
    if data is not None:
        argv += [f"--data-raw={data}"]
    argv += ["--", target]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refused it (usage + one line)
        code = exc.code
        assert code == 2
    captured = capsys.readouterr()
    event(f"exit {code}")  # --hypothesis-show-statistics: how the examples ended
    assert 0 <= code <= 100, (code, captured.err)  # curl's exit codes (CURLE_*)
    assert "Traceback" not in captured.err
    if code not in (0, 2) or (code == 2 and "usage:" not in captured.err):
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("probetop: error:"), captured.err
    if as_json and code not in (1, 2, 3):
        json.loads(captured.out)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 50, grown_mb
