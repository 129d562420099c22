"""The redaction rules (probes/record/redaction.py): by name and shape, never by value.

Each rule is tested where a secret can sit (a JSON field, a header line, a URL,
a command line, a command-line string), generated secrets are fed through
every context (hypothesis), and the rules are shown not to touch a real
recording that holds no secret (tests/data/tui_session.jsonl).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import string
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from probetop.probes.record import (
    KEEP_BODY_FLAG,
    REDACTED,
    body_digest,
    redact,
    redact_argv,
    redact_header,
    redact_text,
    redact_url,
    set_body_key_loader,
)
from probetop.probes.record.codec import dump_line
from probetop.probes.record.redaction import secret_param_name

DATA = Path(__file__).resolve().parents[1] / "data"
SECRET = "zqS3cretValueqz"  # no hex digits run, appears nowhere else

SECRET_HEADERS = [
    "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "authorization",
    "X-Api-Key", "X-API-KEY", "Api-Key", "x-auth-token", "X-Amz-Security-Token",
    "Private-Token", "X-Client-Secret", "X-Session-Id", "X-CSRF-Token", "X-Password",
    "X-Goog-Credential", "X-Signature", "Sec-WebSocket-Key", "X-Vault-Token",
]  # fmt: skip
PLAIN_HEADERS = ["Accept", "User-Agent", "Host", "X-Request-Id", "Content-Type", "Keep-Alive"]
SECRET_PARAMS = [
    "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "apiKey", "key",
    "sig", "signature", "X-Amz-Signature", "X-Amz-Credential", "X-Goog-Signature", "password",
    "passwd", "pwd", "secret", "client_secret", "auth", "auth_token", "code", "session",
    "sessionid", "jwt", "Key-Pair-Id", "AWSAccessKeyId", "oauth_token", "TOKEN", "private_key",
]  # fmt: skip
PLAIN_PARAMS = ["q", "page", "id", "lang", "keyword", "keys", "author", "codec", "x", "state"]


# -- headers -----------------------------------------------------------------------
@pytest.mark.parametrize("name", SECRET_HEADERS)
def test_secret_headers_lose_their_value_everywhere(name):
    line = f"{name}: {SECRET}"
    assert redact_header(line) == f"{name}: {REDACTED}"
    assert redact_text(line) == f"{name}: {REDACTED}"
    assert redact({"headers": [line]}) == {"headers": [f"{name}: {REDACTED}"]}
    assert redact({"request_headers": line}) == {"request_headers": f"{name}: {REDACTED}"}
    for argv in (["-H", line], [f"-H{line}"], [f"--header={line}"], ["--heade", line]):
        assert SECRET not in json.dumps(redact_argv(["probetop", "http", *argv, "http://h/"]))
    assert SECRET not in redact_text(f"curl -H '{line}' http://h/")


@pytest.mark.parametrize("name", PLAIN_HEADERS)
def test_other_headers_are_kept(name):
    line = f"{name}: visible-value"
    assert redact_header(line) == line
    assert redact({"headers": [line]}) == {"headers": [line]}
    assert redact_argv(["probetop", "http", "-H", line]) == ["probetop", "http", "-H", line]


def test_header_forms_of_curl_and_empty_values():
    assert redact_header("Authorization;") == "Authorization;"  # curl's empty header
    assert redact_header("Authorization:") == "Authorization:"  # curl's "remove it"
    assert redact_header("X-Api-Key:zqnospaceqz") == f"X-Api-Key: {REDACTED}"
    # Free text: a host:port is not a header line, a header line is.
    assert redact_text("keyserver:11371/pks") == "keyserver:11371/pks"
    assert redact_text("token.example:443") == "token.example:443"
    assert redact_text("X-Api-Key: 12345") == f"X-Api-Key: {REDACTED}"


# -- URLs ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"https://alice:{SECRET}@h.example/x", "https://***@h.example/x"),
        (f"https://{SECRET}@github.com/o/r", "https://***@github.com/o/r"),
        (f"https://{SECRET}:x-oauth-basic@github.com/", "https://***@github.com/"),
        (f"http://a@b:{SECRET}@h/", "http://***@h/"),  # the last '@' ends the user-info
        (f"http://u:{SECRET}@[::1]:8080/", "http://***@[::1]:8080/"),
        (f"u:{SECRET}@h.example/x", "***@h.example/x"),  # no scheme, as curl takes it
        ("https://h.example/p?q=1", "https://h.example/p?q=1"),
        # As curl reads a URL without "//": user "mailto", password "someone".
        ("mailto:someone@example.com", "***@example.com"),
    ],
)
def test_url_user_info_is_hidden_whole(url, expected):
    assert redact_url(url) == expected


@pytest.mark.parametrize("name", SECRET_PARAMS)
def test_credential_parameters_lose_their_value(name):
    for url in (
        f"https://h/p?{name}={SECRET}",
        f"https://h/p?a=1&{name}={SECRET}&b=2",
        f"https://h/cb#{name}={SECRET}&state=x",
        f"h:8080/p?{name}={SECRET}",  # an entity label
        f"/relative?{name}={SECRET}",  # a Location
    ):
        out = redact_url(url)
        assert SECRET not in out and f"{name}={REDACTED}" in out, out
        assert redact_text(f"see {url} now") == f"see {out} now"
    assert secret_param_name(name)


@pytest.mark.parametrize("name", PLAIN_PARAMS)
def test_other_parameters_are_kept(name):
    url = f"https://h/p?{name}=visible"
    assert redact_url(url) == url
    assert not secret_param_name(name)


def test_urls_inside_parameters_are_redacted_too():
    inner = f"https://carol:{SECRET}@idp.example/cb?token={SECRET}&x=1"
    for outer in (
        f"https://h/login?next={quote(inner, safe='')}",
        f"https://h/login?next={quote(inner)}",
        f"https://h/login?next={inner}",
    ):
        out = redact_text(outer)
        assert SECRET not in out, out
        assert out.startswith("https://h/login?next=")


def test_form_and_cookie_strings_in_free_text():
    assert redact_text(f"session={SECRET}; theme=dark") == f"session={REDACTED}; theme=dark"
    assert redact_text(f"a=1&password={SECRET}") == f"a=1&password={REDACTED}"
    assert redact_text("a=1&b=2") == "a=1&b=2"


# -- fields ------------------------------------------------------------------------------
def test_credential_fields_and_bodies():
    doc = {
        "password": SECRET,
        "user": f"bob:{SECRET}",
        "client_secret": SECRET,
        "api_token": SECRET,
        "AccessKey": SECRET,
        "cookie": f"a={SECRET}",
        "cookies": {"a": SECRET, "n": 3},
        "user_agent": "curl/8",
        "http_code": 200,
        "keys": ["visible"],
        "data": "a=1",
        "body": ["x", "yy"],
        "data_as_sent": "opted-in",
        "password_len": 8,
    }
    out = redact(doc)
    assert SECRET not in json.dumps(out)
    assert out["user_agent"] == "curl/8" and out["http_code"] == 200 and out["keys"] == ["visible"]
    assert out["cookies"] == {"a": REDACTED, "n": 3}  # numbers stay numbers
    assert out["data"] == body_digest(b"a=1")
    assert out["body"] == [body_digest(b"x"), body_digest(b"yy")]
    assert out["data_as_sent"] == "opted-in"
    assert out["password_len"] == 8


def test_body_digest_is_length_and_keyed_hash():
    """A keyed hash (HMAC-SHA256, the per-install key): an unsalted SHA-256
    of a short body is reversed by trying candidates. No key: length only."""
    key = b"k" * 32
    set_body_key_loader(lambda: key)
    try:
        digest = body_digest("é=1")  # the bytes a str stands for: UTF-8
        raw = "é=1".encode()
        mac = hmac.new(key, raw, hashlib.sha256).hexdigest()
        assert digest == f"<{len(raw)} bytes, hmac-sha256:{mac}>"
        assert hashlib.sha256(raw).hexdigest() not in digest
        assert body_digest(digest) == digest  # idempotent
        assert body_digest("\udcff") == body_digest(b"\xff")  # undecodable argv bytes
        set_body_key_loader(lambda: b"o" * 32)  # another install: another hash
        assert body_digest("é=1") != digest
    finally:
        set_body_key_loader(None)
    assert body_digest("é=1") == f"<{len(raw)} bytes>"
    assert body_digest(f"<{len(raw)} bytes>") == f"<{len(raw)} bytes>"
    old = f"<3 bytes, sha256:{hashlib.sha256(b'a=1').hexdigest()}>"
    assert body_digest(old) == old  # older recordings: left as they are


# -- command lines -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["-u", f"bob:{SECRET}"],
        [f"-ubob:{SECRET}"],
        ["--user", f"bob:{SECRET}"],
        [f"--user=bob:{SECRET}"],
        ["-sSu", f"bob:{SECRET}"],  # grouped short options
        [f"-ksu{SECRET}"],
        ["-b", f"sid={SECRET}"],
        ["--cook", f"sid={SECRET}"],  # an abbreviation argparse accepts
        ["-d", f"password={SECRET}"],
        [f"-d{SECRET}"],
        ["--data-binary", SECRET],
        [f"--data-raw={SECRET}"],
        ["--data-urlencode", f"q={SECRET}"],
        ["--data-b", SECRET],
        ["-x", f"http://u:{SECRET}@proxy:3128"],
        ["-e", f"https://h/?token={SECRET}"],
        [f"http://u:{SECRET}@h/"],
        [f"u:{SECRET}@h/"],
        [f"https://h/?access_token={SECRET}"],
        ["--", f"https://u:{SECRET}@h/"],
    ],
)
def test_command_lines_lose_credentials_and_bodies(args):
    out = redact_argv(["probetop", "http", *args, "http://h/"])
    assert SECRET not in json.dumps(out), out
    assert len(out) == len(args) + 3  # same shape: nothing dropped or merged
    # The header line of a recording holds sys.argv: the generic redact does the same.
    assert SECRET not in json.dumps(redact({"command": ["probetop", "http", *args]}))


def test_bodies_are_kept_when_the_command_line_opts_in():
    argv = ["probetop", "http", KEEP_BODY_FLAG, "-d", "a=1", "-u", f"bob:{SECRET}", "http://h/"]
    out = redact_argv(argv)
    assert "a=1" in out and SECRET not in json.dumps(out)


def test_curl_command_strings_and_curl_json_body():
    text = f"curl -s -u bob:{SECRET} --json '{{\"pw\":\"{SECRET}\"}}' -F 'f={SECRET}' http://h/"
    out = redact_text(text)
    assert SECRET not in out and out.startswith("curl -s -u")
    # probetop's --json is an output switch: the argument after it is kept.
    argv = ["probetop", "http", "--json", "http://h/visible"]
    assert redact_argv(argv) == argv


def test_non_flag_values_are_not_mistaken_for_options():
    argv = ["probetop", "icmp", "-c", "5", "-s", "56", "127.0.0.1"]
    assert redact_argv(argv) == argv
    assert redact({"values": {"ttfb_ms@127.0.0.1:80/a?x=1": 1.5}}) == {
        "values": {"ttfb_ms@127.0.0.1:80/a?x=1": 1.5}
    }


# -- the whole structure ------------------------------------------------------------------
def test_a_real_recording_without_secrets_is_unchanged():
    """No false positives on what probetop itself writes."""
    lines = (DATA / "tui_session.jsonl").read_text().splitlines()
    assert len(lines) > 20
    for line in lines:
        obj = json.loads(line)
        assert redact(obj) == obj
        assert dump_line(obj) == line + "\n"


def test_a_demo_recording_of_every_family_has_nothing_redacted(tmp_path):
    """Every probe family's params, samples and summaries (the demo runs them
    all) hold no secret, so no rule may fire on them: a field named like a
    credential in some family (warmup's ``pass``) would lose its data."""
    rec = tmp_path / "demo.jsonl"
    out = subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", "demo", "--headless", "--time", "3",
         "--interval", "0.5", "--record", str(rec)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = rec.read_text()
    kinds = {json.loads(line).get("kind") for line in text.splitlines() if '"type":"probe"' in line}
    header = json.loads(text.splitlines()[0])
    kinds |= {p["kind"] for p in header["probes"]}
    assert {"cpu", "http", "iops", "warmup", "system.cpu"} <= kinds, kinds
    assert REDACTED not in text and "sha256:" not in text


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None, database=None)
@given(JSON)
def test_redaction_never_raises_and_is_idempotent(obj):
    once = redact(obj)
    assert redact(once) == once
    json.dumps(once)


NAME_PARTS = st.sampled_from(["", "x-", "X_", "my_", "client-", "oauth_", "my"])
SECRET_VALUES = st.text(string.ascii_letters + string.digits + "._~-", min_size=6, max_size=30).map(
    lambda s: f"zq{s}qz"
)


@st.composite
def secret_in_context(draw):
    """A JSON-safe structure with ``secret`` in one of the places a credential sits."""
    secret = draw(SECRET_VALUES)
    prefix = draw(NAME_PARTS)
    header = draw(
        st.sampled_from(["Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"])
        | st.sampled_from(["key", "token", "secret", "auth", "Key", "TOKEN"]).map(
            lambda w: f"{prefix}{w}-Value"
        )
    )
    # Joined as people write them: my_token, x-api-key, myToken (camelCase).
    param = draw(
        st.sampled_from(SECRET_PARAMS).map(
            lambda p: prefix + (p[0].upper() + p[1:] if prefix == "my" else p)
        )
    )
    field = draw(st.sampled_from(["password", "token", "api_key", "client_secret", "user"]))
    flag = draw(st.sampled_from(["-u", "--user", "-b", "-d", "--data-raw", "--data-binary"]))
    value = f"a={secret}" if flag == "-b" else secret
    contexts = [
        {"headers": [f"{header}: {secret}"]},
        f"{header}: {secret}",
        f"https://u:{secret}@h.example/",
        f"https://{secret}@h.example/",
        f"https://h.example/p?{param}={secret}&z=1",
        f"https://h.example/p?next={quote(f'https://h2/?{param}={secret}', safe='')}",
        {field: secret},
        {"params": {"request": {field: secret}}},
        ["probetop", "http", flag, value, "http://h/"],
        ["probetop", "http", f"{flag}={value}", "http://h/"],
        ["probetop", "http", "-H", f"{header}: {secret}", "http://h/"],
        f"curl -H '{header}: {secret}' http://h/",
        {"data": secret},
    ]
    return secret, draw(st.sampled_from(contexts))


@settings(max_examples=2000, deadline=None, database=None)
@given(secret_in_context())
def test_a_generated_secret_never_survives(case):
    secret, obj = case
    assert secret not in json.dumps(redact({"x": obj}), ensure_ascii=False)
    assert secret not in dump_line({"x": obj})
