"""One-off ``--json`` against pycurlb: the same keys with the same types, our
own fields under ``"probetop"``, and pycurlb's options accepted or refused.

``data/pycurlb-0.2.2.json`` is the real output of pycurlb 0.2.2 (pip install
pycurlb, which pulled pycurl 7.49.0) for a GET of ``python3 -m http.server``
on 127.0.0.1: ``python -m pycurlb http://127.0.0.1:PORT/``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from http_fixtures import LocalServer
from probetop.probes.http.pycurlb import PROBETOP_KEY, PYCURLB_KEYS
from probetop.tui.main import main

SAMPLE = json.loads((Path(__file__).parent / "data" / "pycurlb-0.2.2.json").read_text())


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["http", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def assert_pycurlb_shaped(doc: dict, reference: dict) -> None:
    """Every key pycurlb printed, with its type (a null in pycurlb's output:
    null or a string here), plus ours under one key."""
    assert set(doc) == set(reference) | {PROBETOP_KEY}
    for key, value in reference.items():
        if value is None:
            assert doc[key] is None or isinstance(doc[key], str), key
        else:
            assert type(doc[key]) is type(value), (key, doc[key], value)
        if isinstance(value, list):
            assert all(isinstance(v, str) for v in doc[key]), key


def test_the_stored_sample_is_what_pycurlb_prints():
    assert sorted(SAMPLE) == list(PYCURLB_KEYS) and len(SAMPLE) == 39


def test_json_has_every_pycurlb_key_with_its_type(server, capsys):
    code, doc = run_json(capsys, f"{server.url}/bytes?n=5000")
    assert code == 0
    assert_pycurlb_shaped(doc, SAMPLE)
    # pycurlb's order (sorted keys), then ours.
    assert list(doc) == [*PYCURLB_KEYS, PROBETOP_KEY]
    assert doc["size_download"] == 5000.0 == doc["content_length_download"]
    assert doc["speed_download"] > 0 and doc["size_upload"] == 0.0
    assert doc["connect_timeout"] == 300 and doc["max_time"] == 0 and doc["compressed"] is False
    assert doc["scheme"] == "http" and doc["redirect_url"] is None
    assert doc[PROBETOP_KEY]["phases_us"]["server"] >= 0


def test_a_failed_transfer_keeps_the_key_set(capsys):
    code, doc = run_json(capsys, "http://127.0.0.1:1/")
    assert code == 7  # curl's CURLE_COULDNT_CONNECT
    assert set(doc) == set(SAMPLE) | {PROBETOP_KEY}
    assert doc["http_code"] == 0 and doc["content_length_download"] == -1.0
    assert doc[PROBETOP_KEY]["error"] == "refused"


def test_redirect_url_and_options_as_pycurlb_reports_them(server, capsys):
    code, doc = run_json(
        capsys,
        "--compressed",
        "--max-time-ms",
        "2500",
        "--connect-timeout-ms",
        "1000",
        "-0",
        f"{server.url}/redirect?n=1&to=/echo",
    )
    assert code == 0 and doc["http_code"] == 302
    assert doc["redirect_url"].endswith("/echo")
    assert doc["compressed"] is True
    assert doc["max_time"] == 2.5 and doc["connect_timeout"] == 1
    assert doc[PROBETOP_KEY]["request"]["http_version"] == "1.0"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-g"], "pycurlb's -g means --get"),
        (["--expect100-timeout", "2"], "100-continue"),
        (["--expect100-timeout-ms", "2"], "100-continue"),
        (["--ignore-content-length"], "framed"),
        (["-V"], "probetop --version"),
        (["-m", "1", "--max-time-ms", "5"], "not both"),
    ],
)
def test_pycurlb_options_probetop_refuses_say_so(server, capsys, args, says):
    assert main(["http", *args, f"{server.url}/"]) == 2
    err = capsys.readouterr().err
    assert says in err, err


@pytest.mark.skipif(
    importlib.util.find_spec("pycurlb") is None, reason="pycurlb is not installed here"
)
def test_against_pycurlb_itself(server, capsys):
    url = f"{server.url}/bytes?n=700"
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "pycurlb", url],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    theirs = json.loads(out.stdout)
    code, ours = run_json(capsys, url)
    assert code == 0
    assert_pycurlb_shaped(ours, theirs)
    for key in ("http_code", "size_download", "content_length_download", "method", "scheme"):
        assert ours[key] == theirs[key], key
