"""curl's -c/--cookie-jar in `probetop http` (it was refused: "cookies are
not saved"): the jar libcurl writes, beside curl 7.88 with the same words;
every URL of one command sees the cookies the ones before it got, as with
curl's one handle."""

from __future__ import annotations

import email.utils
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_fixtures import RawServer

EXE = str(Path(sys.executable).parent / "probetop")
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def _cookie_reply() -> bytes:
    """Two cookies, one HttpOnly with an Expires 30 days out (within the 400
    days newer libcurls keep)."""
    expires = email.utils.formatdate(time.time() // 86400 * 86400 + 30 * 86400, usegmt=True)
    return (
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n"
        "Set-Cookie: a=1; Path=/\r\n"
        f"Set-Cookie: s=2; HttpOnly; Expires={expires}\r\n\r\nok"
    ).encode()


def _cookies_seen(server: RawServer) -> list[str | None]:
    """Each request's Cookie header (None: none), in order."""
    seen: list[str | None] = []
    for head in server.received:
        lines = head.decode("latin-1").split("\r\n")
        cookie = [h.split(":", 1)[1].strip() for h in lines if h.lower().startswith("cookie:")]
        seen.append(cookie[0] if cookie else None)
    return seen


@pytest.fixture
def server() -> Iterator[RawServer]:
    with RawServer(_cookie_reply()) as s:
        yield s


def _run(tool: str, words: list[str], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    cmd = ["curl", *words] if tool == "curl" else [EXE, "http", *words]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, env=env, timeout=60)


@needs_curl
def test_the_jar_and_the_cookies_sent_are_curls(server: RawServer, tmp_path: Path) -> None:
    jars = {}
    for tool in ("curl", "probetop"):
        jar = tmp_path / f"{tool}.jar"
        urls = [f"{server.url}/one", f"{server.url}/two"]
        done = _run(
            tool, ["-s", "-o", "/dev/null", "-o", "/dev/null", "-c", str(jar), *urls], tmp_path
        )
        assert done.returncode == 0, done.stderr
        jars[tool] = jar.read_bytes()
    assert jars["probetop"] == jars["curl"]
    assert b"#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t" in jars["curl"]
    # each tool: no cookie on its first request, both on its second
    assert _cookies_seen(server) == [None, "s=2; a=1", None, "s=2; a=1"]


@needs_curl
def test_a_jar_to_stdout_comes_after_the_bodies(server: RawServer, tmp_path: Path) -> None:
    outs = [
        _run(tool, ["-s", "-o", "-", "-c", "-", server.url], tmp_path).stdout
        for tool in ("curl", "probetop")
    ]
    assert outs[0] == outs[1] and outs[1].startswith(b"ok# Netscape HTTP Cookie File\n")


def test_a_jar_that_cannot_be_written_is_said(server: RawServer, tmp_path: Path) -> None:
    jar = tmp_path / "missing" / "jar"
    done = _run("probetop", ["-o", "/dev/null", "-c", str(jar), server.url], tmp_path)
    assert done.returncode == 0  # as curl 7.88
    assert f"probetop: warning: failed to save cookies in {jar}".encode() in done.stderr


def test_the_jar_is_a_one_off_option(server: RawServer, tmp_path: Path) -> None:
    done = _run("probetop", ["-c", str(tmp_path / "j"), "--count", "2", server.url], tmp_path)
    assert done.returncode == 2 and b"-c/--cookie-jar is a one-off option" in done.stderr


class _Redirects(http.server.BaseHTTPRequestHandler):
    """/start sets a cookie and redirects to /end, which sets another; the
    Cookie header of every request is kept in ``server.cookies``."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.cookies.append(self.headers.get("Cookie"))  # type: ignore[attr-defined]
        first = self.path == "/start"
        self.send_response(302 if first else 200)
        self.send_header("Set-Cookie", "hop1=a; Path=/" if first else "hop2=b; Path=/")
        if first:
            self.send_header("Location", "/end")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirects() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirects)
    server.cookies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@needs_curl
@pytest.mark.parametrize("engine", ["-c", "-b"])
def test_a_followed_redirect_keeps_the_jar_as_curls(
    engine: str, redirects: http.server.ThreadingHTTPServer, tmp_path: Path
) -> None:
    """-L with the cookie engine on (-c, or a cookie file in -b): each hop got
    its own share before, and the second one ended in a traceback ("Curl
    object already sharing"); now the hop after a redirect is sent the
    cookie the redirect set, and the jar is curl's."""
    url = f"http://127.0.0.1:{redirects.server_address[1]}/start"
    given = tmp_path / "given.jar"
    given.write_text("127.0.0.1\tFALSE\t/\tFALSE\t0\tpre\tv\n")
    jars = {}
    for tool in ("curl", "probetop"):
        jar = tmp_path / f"{tool}.jar"
        where = ["-c", str(jar)] if engine == "-c" else ["-b", str(given)]
        done = _run(tool, ["-s", "-L", "-o", "/dev/null", *where, url], tmp_path)
        assert done.returncode == 0 and not done.stderr, done.stderr
        if engine == "-c":
            jars[tool] = jar.read_bytes()
    seen = redirects.cookies  # type: ignore[attr-defined]
    assert seen[2:] == seen[:2], seen  # probetop's two requests sent curl's cookies
    assert seen[0] == (None if engine == "-c" else "pre=v")
    assert "hop1=a" in seen[1].split("; "), seen
    if engine == "-c":
        assert jars["probetop"] == jars["curl"] and b"\thop2\tb\n" in jars["curl"]


@needs_curl
def test_a_jar_to_a_device_is_written_as_curls(server: RawServer, tmp_path: Path) -> None:
    """-c /dev/stdout (into a pipe) and -c /dev/null are saved, as curl's:
    same bytes, and no warning (probetop said "failed to save cookies" for
    both, as neither is a regular file afterwards)."""
    outs = []
    for tool in ("curl", "probetop"):
        done = _run(tool, ["-s", "-o", "/dev/null", "-c", "/dev/stdout", server.url], tmp_path)
        assert done.returncode == 0 and not done.stderr, (tool, done.stderr)
        outs.append(done.stdout)
    assert outs[1] == outs[0] and outs[0].startswith(b"# Netscape HTTP Cookie File\n")
    done = _run("probetop", ["-o", "/dev/null", "-c", "/dev/null", server.url], tmp_path)
    assert done.returncode == 0 and b"failed to save cookies" not in done.stderr, done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_jar_to_a_full_device_is_said(server: RawServer, tmp_path: Path) -> None:
    """libcurl's unchecked fclose loses a jar on a full disk without a word;
    /dev/full stands for one."""
    done = _run("probetop", ["-o", "/dev/null", "-c", "/dev/full", server.url], tmp_path)
    assert done.returncode == 0  # as curl 7.88
    assert b"probetop: warning: failed to save cookies in /dev/full" in done.stderr


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv (root without CAP_DAC_OVERRIDE)",
)
def test_a_jar_libcurl_cannot_replace_is_said(server: RawServer, tmp_path: Path) -> None:
    """An existing read-only jar: libcurl writes nothing (exit 0, as curl),
    and probetop said nothing either, as the file was still there."""
    jar = tmp_path / "jar"
    jar.write_text("old\n")
    jar.chmod(0o444)
    drop = "-dac_override,-dac_read_search"
    setpriv = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"]
    done = subprocess.run(
        [*setpriv, EXE, "http", "-o", "/dev/null", "-c", str(jar), server.url],
        capture_output=True,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 0 and jar.read_text() == "old\n"
    assert f"probetop: warning: failed to save cookies in {jar}".encode() in done.stderr


def test_a_jar_is_written_without_a_private_copy(
    server: RawServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved-or-not check writes a private copy first; where none can be
    made (a temp directory that is a file here, as a full one would be),
    FILE is still written, and a lost one still said."""
    import tempfile

    import pycurl
    from probetop.probes.http.transfer import cookie_engine, save_cookies

    jar = cookie_engine()
    curl = pycurl.Curl()
    curl.setopt(pycurl.SHARE, jar)
    curl.setopt(pycurl.COOKIEFILE, "")
    curl.setopt(pycurl.URL, server.url)
    curl.setopt(pycurl.WRITEFUNCTION, lambda _data: None)
    curl.perform()
    curl.close()
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_dir))
    assert save_cookies(jar, str(tmp_path / "jar"))
    assert b"\ta\t1\n" in (tmp_path / "jar").read_bytes()
    assert not save_cookies(jar, str(tmp_path / "missing" / "jar"))


def test_json_and_a_jar_on_stdout_are_refused(server: RawServer, tmp_path: Path) -> None:
    """--json with -c -: the jar followed the document on stdout, which no
    JSON reader takes; refused before anything is sent. -c FILE goes."""
    done = _run("probetop", ["--json", "-c", "-", server.url], tmp_path)
    assert done.returncode == 2 and b"-c - writes the cookie jar to stdout" in done.stderr
    assert server.received == []
    done = _run("probetop", ["--json", "-c", str(tmp_path / "jar"), server.url], tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["http_code"] == 200
    assert (tmp_path / "jar").read_bytes().startswith(b"# Netscape HTTP Cookie File\n")
