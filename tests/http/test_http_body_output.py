"""curl's output mode in `probetop http` (-w or -o): the body as curl writes
it, beside real curl with the same argv on the same loopback URL, stdout
compared byte for byte; ``-o FILE`` and ``%{filename_effective}``;
``%{certs}`` / ``%{num_certs}`` on a self-signed TLS server.

curl (7.88 here) and probetop (the pycurl wheel's libcurl) are different
libcurl builds: the certificate chain is compared line by line by key (each
build's OpenSSL prints the same certificate), and byte for byte where the
two agree (they do for the builds here; a build that spells a field
differently shows up as a key difference).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserver import PRELOAD, run_probetop_bytes
from http_fixtures import LocalServer, make_cert

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl CLI")

PROBETOP = [sys.executable, "-m", "probetop.tui.main", "http"]
# run_both forks probetop from a zygote that has imported the CLI and the
# http family (tests/forkserver.py: a process of its own with this argv, cwd,
# environment, stdio and exit status; ~0.3 CPU-s of start-up spared a run);
# test_without_write_out_the_waterfall_is_unchanged starts the whole
# `python -m`.
HTTP_PRELOAD = (*PRELOAD, "probetop.probes.http", "pycurl")


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    with LocalServer(tls=make_cert(tmp_path_factory.mktemp("bcert"))) as s:
        yield s


def run_both(
    args: list[str], cwd: Path
) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """(curl, probetop) with the same argv, each in its own directory under ``cwd``."""
    cwd.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(cwd / "state")}
    (cwd / "curl").mkdir()
    (cwd / "ours").mkdir()
    curl = subprocess.run(
        ["curl", *args], capture_output=True, timeout=30, cwd=cwd / "curl", env=env
    )
    ours = run_probetop_bytes(
        ["http", *args], env=env, timeout=30, cwd=cwd / "ours", preload=HTTP_PRELOAD
    )
    return curl, ours


def test_write_out_prints_the_body_then_the_format(server, tmp_path):
    # The resp=$(curl -s -w '\n%{http_code}' URL) idiom: body, then the code.
    url = f"{server.url}/bytes?n=700"
    curl, ours = run_both(["-s", "-w", "\\n%{http_code}", url], tmp_path)
    assert curl.stdout == b"x" * 700 + b"\n200"
    assert ours.stdout == curl.stdout
    assert ours.returncode == curl.returncode == 0


def test_write_out_body_of_an_error_status_and_of_each_url(server, tmp_path):
    urls = [f"{server.url}/status?code=404", f"{server.url}/bytes?n=3"]
    curl, ours = run_both(["-s", "-w", "[%{http_code} %{filename_effective}]\\n", *urls], tmp_path)
    assert curl.stdout == b"status\n[404 ]\nxxx[200 ]\n"
    assert ours.stdout == curl.stdout


def test_output_file_and_filename_effective(server, tmp_path):
    url = f"{server.url}/bytes?n=5000"
    fmt = "%{filename_effective} %{size_download}\\n"
    curl, ours = run_both(["-s", "-o", "out", "-w", fmt, url, url], tmp_path)
    # -o goes with the first URL; the second URL's body goes to stdout.
    assert curl.stdout == b"out 5000\n" + b"x" * 5000 + b" 5000\n"
    assert ours.stdout == curl.stdout
    assert (tmp_path / "ours" / "out").read_bytes() == (tmp_path / "curl" / "out").read_bytes()
    mode = (tmp_path / "curl" / "out").stat().st_mode & 0o777
    assert (tmp_path / "ours" / "out").stat().st_mode & 0o777 == mode


def test_output_per_url_empty_body_and_failures(server, tmp_path):
    # Each -o goes with the next URL in order, as curl pairs them.
    outputs = ["empty", "refused", "failed", "-", "/dev/null"]
    urls = [
        f"{server.url}/bytes?n=0",
        "http://127.0.0.1:1/",
        f"{server.url}/status?code=500",
        f"{server.url}/bytes?n=2",
        f"{server.url}/bytes?n=9",
    ]
    args = ["-s", "-f", "-w", "[%{exitcode} %{filename_effective}]"]
    for name in outputs:
        args += ["-o", name]
    args += urls
    curl, ours = run_both(args, tmp_path)
    assert ours.stdout == curl.stdout
    assert curl.stdout == b"[0 empty][7 refused][22 failed]xx[0 ][0 /dev/null]"
    assert ours.returncode == curl.returncode
    for side in ("curl", "ours"):
        made = sorted(p.name for p in (tmp_path / side).iterdir())
        assert made == ["empty"], (side, made)  # a failed transfer makes no file
        assert (tmp_path / side / "empty").read_bytes() == b""


def test_output_into_a_missing_directory_is_curls_write_error(server, tmp_path):
    args = ["-s", "-o", "nodir/out", "-w", "%{exitcode}", f"{server.url}/bytes?n=9"]
    curl, ours = run_both(args, tmp_path)
    assert ours.returncode == curl.returncode == 23
    assert ours.stdout == curl.stdout == b"23"


def files(directory: Path) -> list[tuple[str, int, bytes]]:
    """(path, mode, content or b"<dir>") of everything under ``directory``."""
    return sorted(
        (
            str(p.relative_to(directory)),
            p.stat().st_mode & 0o777,
            b"<dir>" if p.is_dir() else p.read_bytes(),
        )
        for p in directory.rglob("*")
    )


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (
            "URLs between options",
            ["-s", "{url}/bytes?n=3", "-o", "a", "{url}/bytes?n=5", "-o", "b"],
        ),
        ("-w after the URL", ["{url}/bytes?n=3", "-s", "-o", "f", "-w", "%{http_code}"]),
        ("-O", ["-s", "-O", "{url}/bytes?n=3"]),
        (
            "-O keeps escapes, drops the query",
            ["-s", "-H", "User-Agent: t", "-O", "{url}/a/b%20c?n=4"],
        ),
        ("-O on a path ending in /", ["-s", "-O", "{url}/"]),
        ("-O among -o", ["-s", "-O", "-o", "f", "{url}/bytes?n=3", "{url}/bytes?n=5"]),
        ("-O, refused", ["-s", "-O", "http://127.0.0.1:1/zz"]),
        ("--create-dirs", ["-s", "--create-dirs", "-o", "x/y/z", "{url}/bytes?n=3"]),
        ("--create-dirs -O", ["-s", "--create-dirs", "-O", "{url}/bytes?n=2"]),
        ("--create-dirs fails", ["-s", "--create-dirs", "-o", "/proc/x/y", "{url}/bytes?n=3"]),
    ],
)
def test_remote_name_create_dirs_and_urls_anywhere_as_curl(server, tmp_path, name, args):
    """-O, --create-dirs and URLs among the options: the same files (names,
    modes, bytes), stdout, -w values and exit code as curl."""
    fmt = "[%{filename_effective}|%{exitcode}]"  # errormsg: test_http_writeout.py
    filled = [a.replace("{url}", server.url) for a in args]
    if "-w" not in filled:
        filled += ["-w", fmt]
    curl, ours = run_both(filled, tmp_path)
    assert ours.returncode == curl.returncode, (name, ours.stderr)
    assert ours.stdout == curl.stdout, name
    assert files(tmp_path / "ours") == files(tmp_path / "curl"), name
    # curl says why a directory could not be made even under -s; so does probetop.
    assert bool(ours.stderr) == bool(curl.stderr), (name, ours.stderr, curl.stderr)


def test_without_write_out_the_waterfall_is_unchanged(server, tmp_path):
    ours = subprocess.run(
        [*PROBETOP, f"{server.url}/bytes?n=700"], capture_output=True, timeout=30, cwd=tmp_path
    )
    assert ours.returncode == 0
    assert ours.stdout.startswith(b"GET ")
    assert b"x" * 700 not in ours.stdout


def test_certs_and_num_certs_as_curl(tls_server, tmp_path):
    fmt = "%{num_certs}\\n%{certs}"
    curl, ours = run_both(["-sk", "-o", "/dev/null", "-w", fmt, f"{tls_server.url}/"], tmp_path)
    assert curl.stdout.startswith(b"1\nSubject:")
    assert ours.stdout.split(b"\n", 1)[0] == b"1"

    def keys(out: bytes) -> list[bytes]:
        return [line.split(b":", 1)[0] for line in out.split(b"\n")[1:] if b":" in line]

    assert keys(ours.stdout) == keys(curl.stdout)
    assert b"-----BEGIN CERTIFICATE-----" in ours.stdout
    assert ours.stdout == curl.stdout  # the same certificate, the same text


def test_certs_in_json_and_not_asked_for_otherwise(tls_server, tmp_path):
    import json

    curl, ours = run_both(
        ["-sk", "-o", "/dev/null", "-w", "%{json}", f"{tls_server.url}/"], tmp_path
    )
    c, o = json.loads(curl.stdout), json.loads(ours.stdout)
    assert o["num_certs"] == c["num_certs"] == 1
    assert o["certs"] == c["certs"]
    assert o["filename_effective"] == c["filename_effective"] == "/dev/null"
    # libcurl is asked for the chain (CURLOPT_CERTINFO) only when the format reads it.
    from probetop.probes.http.writeout import WriteOut

    assert not WriteOut("%{http_code} %{time_total}").wants_certs()
    assert all(WriteOut(f).wants_certs() for f in ("%{certs}", "%{NUM_CERTS}", "%{json}"))


def test_follow_writes_only_the_final_body(server, tmp_path):
    url = f"{server.url}/redirect?n=2&code=301&to=/bytes%3Fn%3D4"
    curl, ours = run_both(["-sL", "-w", "\\n%{http_code} %{num_redirects}", url], tmp_path)
    assert curl.stdout == b"xxxx\n200 2"
    assert ours.stdout == curl.stdout


def test_a_followed_redirects_body_is_not_written_an_unfollowed_one_is(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            moved = self.path == "/old"
            body = b"moved\n" if moved else b"final\n"
            self.send_response(302 if moved else 200)
            if moved:
                self.send_header("Location", "/new")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/old"
        for i, extra in enumerate((["-L"], [])):
            curl, ours = run_both([*extra, "-s", "-w", "|%{http_code}", url], tmp_path / str(i))
            assert curl.stdout == (b"final\n|200" if extra else b"moved\n|302")
            assert ours.stdout == curl.stdout
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_remote_name_of_a_path_ending_in_a_slash_in_json(server, tmp_path):
    """-O on `URL/`: curl sets no file name and never gives libcurl the URL:
    %{json} has filename_effective null and url_effective empty."""
    import json

    curl, ours = run_both(["-s", "-O", "-w", "%{json}", f"{server.url}/"], tmp_path)
    theirs, mine = json.loads(curl.stdout), json.loads(ours.stdout)
    assert ours.returncode == curl.returncode == 23
    for key in ("filename_effective", "url_effective", "exitcode", "errormsg", "url"):
        assert mine[key] == theirs[key], (key, mine[key], theirs[key])
