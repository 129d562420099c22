"""Secrets never reach the disk or a report (issue 11, class 5), end to end.

One command line puts a credential in every place the issue lists -- URL
user-info, credential query parameters, Authorization / Proxy-Authorization /
Cookie / Set-Cookie and any header named like key/token/secret/auth (also from
``-H @FILE``), ``-u``, ``-b``, request bodies (-d, --data-urlencode) -- and a
redirect adds more in a Location (user-info and a token). Every output of the
real CLI is then grepped for them: the raw recording file, the one-off JSON and
waterfall, the repeated-mode text and JSON reports, and stderr. Every secret
has the form ``zq...qz``, which no digest or other output can contain.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from urllib.parse import quote

import pytest
from http_fixtures import LocalServer
from probetop.probes.record import load_session

SECRET = re.compile(r"zq[A-Za-z0-9]*qz")
ENV = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", "http", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


def secrets_in(text: str) -> list[str]:
    return sorted(set(SECRET.findall(text)))


@pytest.fixture(scope="module")
def loaded_args(server, tmp_path_factory) -> list[str]:
    """A command line with a credential in every listed place."""
    d = tmp_path_factory.mktemp("secrets")
    headers = d / "headers.txt"
    headers.write_text("X-File-Token: zqfiletokqz\nX-From-File: visible-file\n")
    host = f"127.0.0.1:{server.port}"
    query = "&".join(
        f"{name}=zq{i}qz"
        for i, name in enumerate(
            ["access_token", "api_key", "X-Amz-Signature", "X-Amz-Credential", "code",
             "password", "secret", "sig", "auth", "token", "key", "signature", "client_secret",
             "refresh_token", "apiKey", "session"]
        )
    )  # fmt: skip
    return [
        "-u", "bob:zqbasicpwqz",
        "-b", "sid=zqcookieqz",
        "-H", "Authorization: Bearer zqbearerqz",
        "-H", "Proxy-Authorization: Basic zqproxyauthqz",
        "-H", "Cookie: c=zqcookieheaderqz",
        "-H", "Set-Cookie: s=zqsetcookieqz",
        "-H", "X-Api-Key: zqapikeyqz",
        "-H", "X-Auth-Token: zqauthtokenqz",
        "-H", "X-My-Secret: zqmysecretqz",
        "-H", "Private-Token: zqprivatetokenqz",
        "-H", "X-Visible: visible-header",
        "-H", f"@{headers}",
        "-d", "password=zqbodyqz",
        "--data-urlencode", "q=zqurlencodedqz",
        "--data-binary", "zqbinarybodyqz",
        f"http://alice:zqurlpwqz@{host}/echo?{query}&plain=visible-param",
    ]  # fmt: skip


def test_one_off_json_and_waterfall(loaded_args):
    out = cli("--json", *loaded_args)
    assert out.returncode == 0, out.stderr
    assert secrets_in(out.stdout + out.stderr) == []
    doc = json.loads(out.stdout)
    assert (
        "visible-param" in doc["probetop"]["url"]
        and "X-Visible: visible-header" in doc["probetop"]["request"]["headers"]
    )
    assert (
        doc["probetop"]["request"]["data"].startswith("<")
        and "sha256:" in doc["probetop"]["request"]["data"]
    )
    assert doc["probetop"]["request"]["user"] == "***"
    text = cli(*loaded_args)
    assert text.returncode == 0, text.stderr
    assert secrets_in(text.stdout + text.stderr) == []
    assert "visible-param" in text.stdout


def test_recording_and_repeated_reports(loaded_args, tmp_path):
    rec = tmp_path / "s.jsonl"
    out = cli("--count", "2", "--interval", "0.05", "--record", str(rec), *loaded_args)
    assert out.returncode == 0, out.stderr
    raw = rec.read_bytes().decode()
    assert '"type":"sample"' in raw and '"type":"footer"' in raw
    assert secrets_in(raw) == [], secrets_in(raw)
    assert secrets_in(out.stdout + out.stderr) == []
    # Not everything is wiped: what is not a credential is still there.
    for visible in ("visible-param", "visible-header", "visible-file"):
        assert visible in raw, visible
    assert "bob" not in raw  # -u goes whole: a user name can be the token
    session = load_session(rec)
    assert session.header["command"][-1].startswith("http://***@127.0.0.1")
    as_json = cli("--json", "--count", "2", "--interval", "0.05", *loaded_args)
    assert as_json.returncode == 0, as_json.stderr
    assert secrets_in(as_json.stdout + as_json.stderr) == []
    json.loads(as_json.stdout)


def test_redirect_locations_with_credentials(server, tmp_path):
    """A Location with user-info and a token (and the same URL nested, encoded,
    in the first URL's query): hop URLs, effective_url, reports."""
    target = f"http://carol:zqredirpwqz@127.0.0.1:{server.port}/echo?token=zqredirtokqz&x=1"
    url = f"{server.url}/redirect?n=2&to={quote(target, safe='')}"
    one = cli("--json", "-L", url)
    assert one.returncode == 0, one.stderr
    doc = json.loads(one.stdout)
    assert len(doc["probetop"]["redirects"]) == 3
    assert secrets_in(one.stdout + one.stderr) == []
    assert doc["effective_url"].endswith("/echo?token=***&x=1")
    text = cli("-L", url)
    assert secrets_in(text.stdout + text.stderr) == []
    rec = tmp_path / "r.jsonl"
    rep = cli("-L", "--count", "1", "--record", str(rec), url)
    assert rep.returncode == 0, rep.stderr
    assert secrets_in(rec.read_text() + rep.stdout + rep.stderr) == []


def test_record_body_is_the_opt_in_for_bodies_only(loaded_args, tmp_path):
    rec = tmp_path / "b.jsonl"
    out = cli("--record-body", "--count", "1", "--record", str(rec), *loaded_args)
    assert out.returncode == 0, out.stderr
    raw = rec.read_text()
    bodies = {"zqbodyqz", "zqurlencodedqz", "zqbinarybodyqz"}
    assert set(secrets_in(raw)) == bodies  # the bodies, nothing else
    doc = json.loads(cli("--json", "--record-body", *loaded_args).stdout)
    assert "zqbodyqz" in doc["probetop"]["request"]["data_as_sent"]
    assert set(secrets_in(json.dumps(doc))) == bodies


def test_failures_and_errors_keep_secrets_out_of_messages(tmp_path):
    rec = tmp_path / "e.jsonl"
    url = "http://dave:zqfailpwqz@127.0.0.1:1/x?token=zqfailtokqz"
    one = cli(url)
    assert one.returncode == 7  # curl: could not connect
    assert secrets_in(one.stdout + one.stderr) == []
    rep = cli("--count", "2", "--interval", "0.05", "--record", str(rec), url)
    assert secrets_in(rec.read_text() + rep.stdout + rep.stderr) == []
    bad = cli("http://erin:zqbadpwqz@[::1/?token=zqbadtokqz")
    assert bad.returncode == 3 and secrets_in(bad.stderr) == [], bad.stderr
    bad = cli("-H", "X-Api-Key: zqinjectqz\r\nX: y", "http://127.0.0.1:1/")
    assert bad.returncode == 2 and "CR/LF" in bad.stderr


def test_the_dashboard_add_probe_line_is_redacted_too():
    """The recorder redacts whatever it is given: a probe added with a secret
    in its command line records as any other."""
    from probetop.probes.record import redact

    argv = ["probetop", "http", "-u", "x:zqaddpwqz", "http://u:zqaddurlqz@h/?sig=zqaddsigqz"]
    assert secrets_in(json.dumps(redact({"command": argv}))) == []
