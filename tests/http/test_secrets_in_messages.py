"""A secret given on the command line never comes back in an error message
(issue 29 item 2: error messages are one of the ways out; stderr lands in
CI logs and terminal scrollback that others read).

Seen before (hostile3), each printed the whole secret on stderr, exit 2:
``-H 'Authorization Bearer TOKEN'`` (the colon forgotten: the error quoted
the line), ``-H "Authorization: Bearer $(cat token)"`` of a token file with
a Windows line end (the CR/LF refusal quoted it; ``redact_text`` keeps a
header line with a line break as it is), ``-H 'X-Api-Key: K\\x01'``, a
header given without ``-H`` (taken as a URL: "malformed URL 'X-Token: T'"),
and a URL with a password refused by argparse (``cpu URL``: "invalid
choice: 'http://u:pw@h/'"). The rule (``redact_shown``, in the one function
that quotes a value into an http message, and the parser's ``error``): the
message names the header, never its value.

Real CLI runs; each refusal comes before any request, so no server is
needed, but every URL is a loopback one."""

from __future__ import annotations

import subprocess
import sys

import pytest
from probetop.probes.record import redact_shown

URL = "http://127.0.0.1:9/"
SECRET = "S3cr3tT0k3nValue"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["http", "-H", f"Authorization Bearer {SECRET}", URL], "'Authorization ***' has no colon"),
        (["http", "-H", f"Cookie sid={SECRET}", URL], "'Cookie ***' has no colon"),
        (["http", "-H", f"Authorization: Bearer {SECRET}\r", URL], "'Authorization: ***'"),
        (["http", "-H", f"Authorization: Bearer {SECRET}\n", URL], "'Authorization: ***'"),
        (["http", "-H", f"X-Api-Key: {SECRET}\x01", URL], "'X-Api-Key: ***'"),
        (["http", "-H", f"Proxy-Authorization Basic {SECRET}", URL], "'Proxy-Authorization ***'"),
        (["http", URL, f"X-Token: {SECRET}"], "malformed URL 'X-Token: ***'"),
        (["http", f"http://user:{SECRET}@127.0.0.1:99999/"], "'http://***@127.0.0.1:99999/'"),
        (["cpu", "--threads", "1", f"http://user:{SECRET}@h/"], "Unknown command: http://***@h/"),
        (["memory", "run", f"http://user:{SECRET}@h/"], "argument: http://***@h/"),
        (["http", "--count", "2", URL, f"http://h/?access_token={SECRET} x"], "access_token=***"),
    ],
    ids=[
        "no-colon",
        "cookie-no-colon",
        "cr",
        "lf",
        "control",
        "proxy-header",
        "header-as-url",
        "bad-port",
        "sysbench-command-word",
        "sysbench-extra-word",
        "query-token",
    ],
)
def test_a_refused_value_is_named_without_its_secret(args: list[str], named: str) -> None:
    out = _run(*args)
    assert out.returncode in (1, 2, 3), out.stdout + out.stderr  # 3: curl's malformed URL
    assert SECRET not in out.stdout + out.stderr
    assert named in out.stderr, out.stderr


def test_what_the_user_needs_to_fix_a_plain_header_is_still_shown() -> None:
    out = _run("http", "-H", "Accept text/html", URL)
    assert out.returncode == 2
    assert "'Accept text/html' has no colon" in out.stderr


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("Authorization Bearer x", "Authorization ***"),
        ("authorization:Bearer x\r\n", "authorization: ***"),
        ("X-Auth-Token\tx", "X-Auth-Token ***"),
        ("Authorization:", "Authorization:"),  # nothing to hide: curl's "remove this header"
        ("keyserver:8080/x\n", "keyserver:8080/x\n"),  # a host and port, not a header
        ("Accept: text/html\r", "Accept: text/html\r"),
        ("http://u:pw@h/?sig=1", "http://***@h/?sig=***"),
    ],
)
def test_redact_shown(value: str, want: str) -> None:
    assert redact_shown(value) == want
    assert redact_shown(redact_shown(value)) == want  # idempotent, as every redaction
