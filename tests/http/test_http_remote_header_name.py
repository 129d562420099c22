"""curl's -J/--remote-header-name and --output-dir beside curl 7.88 on a
loopback server: the same files (names, modes, bytes), -w values, exit code
and stderr lines (curl's ``Warning: X`` is probetop's ``probetop: warning:
X``, curl's ``curl: (N) X`` is ``probetop: error: X``), each run in a fresh
directory of its own. curl 7.88's refusals are kept: a Content-Disposition
name never overwrites a file (exit 23, "Failed writing header"), its path
parts are stripped, ``filename*=`` is not read, and -J without -O does
nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserver import PRELOAD, run_probetop_bytes
from http_fixtures import LocalServer

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl CLI")

PROBETOP = [sys.executable, "-m", "probetop.tui.main", "http"]
HTTP_PRELOAD = (*PRELOAD, "probetop.probes.http", "pycurl")
FMT = "[%{filename_effective}|%{exitcode}|%{errormsg}]"
CD = "{url}/disposition?cd=attachment;%20filename="


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


def files(directory: Path) -> list[tuple[str, int, bytes]]:
    return sorted(
        (
            str(p.relative_to(directory)),
            p.stat().st_mode & 0o777,
            b"<dir>" if p.is_dir() else p.read_bytes(),
        )
        for p in directory.rglob("*")
    )


def messages(stderr: bytes, prog: str) -> list[str]:
    """stderr's warning and error lines in one spelling (no progress meter)."""
    out = []
    for line in stderr.decode().splitlines():
        if prog == "curl":
            if m := re.search(r"Warning: (.*)$", line):
                out.append(f"warning: {m.group(1)}")
            elif m := re.match(r"curl: \(\d+\) (.*)$", line):
                out.append(f"error: {m.group(1)}")
        elif m := re.match(r"probetop: (warning|error): (.*)$", line):
            out.append(f"{m.group(1)}: {m.group(2)}")
    return out


CASES = [
    ("quoted name", ["-sS", "-OJ", CD + "%22a.txt%22"], {}),
    ("path parts stripped", ["-sS", "-OJ", CD + "../../etc/b.txt"], {}),
    ("backslash parts stripped", ["-sS", "-OJ", CD + "c\\d.txt"], {}),
    ("name ending in / : the URL's", ["-sS", "-OJ", CD + "%22dir/%22"], {}),
    ("no header: the URL's name", ["-sS", "-OJ", "{url}/disposition"], {}),
    ("no filename= : the URL's name", ["-sS", "-OJ", "{url}/disposition?cd=inline"], {}),
    ("filename*= is not read", ["-sS", "-OJ", CD.replace("filename=", "filename*=") + "x"], {}),
    ("among parameters", ["-sS", "-OJ", CD + "f.txt;%20size=3"], {}),
    ("single quotes", ["-sS", "-OJ", CD + "'q.txt'"], {}),
    ("empty name", ["--no-progress-meter", "-OJ", CD + "%22%22"], {}),
    ("URL/ without a name", ["--no-progress-meter", "-OJ", "{url}/"], {}),
    ("-J without -O does nothing", ["-sS", "-J", CD + "a.txt"], {}),
    ("-J with -o does nothing", ["-sS", "-J", "-o", "x", CD + "a.txt"], {}),
    ("never overwrites", ["--no-progress-meter", "-OJ", CD + "a.txt"], {"a.txt": b"old\n"}),
    ("-s mutes the warning", ["-sS", "-OJ", CD + "a.txt"], {"a.txt": b"old\n"}),
    ("the URL's name overwrites", ["-sS", "-OJ", "{url}/disposition"], {"disposition": b"o"}),
    ("--output-dir -O", ["-sS", "--output-dir", "d", "--create-dirs", "-O", "{url}/bytes?n=3"], {}),
    (
        "--output-dir missing",
        ["--no-progress-meter", "--output-dir", "d", "-O", "{url}/bytes?n=3"],
        {},
    ),
    (
        "--output-dir -o with --create-dirs",
        ["-sS", "--output-dir", "d/e", "--create-dirs", "-o", "f/g", "{url}/bytes?n=3"],
        {},
    ),
    ("--output-dir -J", ["-sS", "--output-dir", "d", "--create-dirs", "-OJ", CD + "a.txt"], {}),
    ("--output-dir -J, no dir", ["--no-progress-meter", "--output-dir", "d", "-OJ", CD + "a"], {}),
    ("--output-dir and stdout", ["-sS", "--output-dir", "d", "-o", "-", "{url}/bytes?n=3"], {}),
    (
        "--output-dir and -o /abs",
        ["-sS", "--output-dir", "d/", "--create-dirs", "-o", "/x", "{url}/bytes?n=3"],
        {},
    ),
    ("empty --output-dir", ["-sS", "--output-dir", "", "-o", "x", "{url}/bytes?n=3"], {}),
    (
        "last --output-dir",
        [
            "-sS",
            "--output-dir",
            "d",
            "--output-dir",
            "e",
            "--create-dirs",
            "-o",
            "x",
            "{url}/bytes?n=3",
        ],
        {},
    ),
    ("--output-dir URL/ -J", ["-sS", "--output-dir", "d", "--create-dirs", "-OJ", "{url}/"], {}),
    (
        "--create-dirs before the transfer",
        ["-sS", "--create-dirs", "-o", "q/r", "http://127.0.0.1:1/"],
        {},
    ),
]


@pytest.mark.parametrize(("name", "args", "before"), CASES, ids=[c[0] for c in CASES])
def test_remote_header_name_and_output_dir_as_curl(server, tmp_path, name, args, before):
    filled = [a.replace("{url}", server.url) for a in args] + ["-w", FMT]
    env = {**os.environ, "NO_COLOR": "1", "XDG_STATE_HOME": str(tmp_path / "state")}
    runs = {}
    for prog in ("curl", "ours"):
        cwd = tmp_path / prog
        cwd.mkdir()
        for fname, data in before.items():
            (cwd / fname).write_bytes(data)
        if prog == "curl":
            runs[prog] = subprocess.run(
                ["curl", *filled], capture_output=True, timeout=30, cwd=cwd, env=env
            )
        elif name == CASES[0][0]:  # one case starts the whole `python -m`
            runs[prog] = subprocess.run(
                [*PROBETOP, *filled], capture_output=True, timeout=30, cwd=cwd, env=env
            )
        else:  # forked from the zygote (tests/forkserver.py), ~0.3 CPU-s less a case
            runs[prog] = run_probetop_bytes(
                ["http", *filled], env=env, timeout=30, cwd=cwd, preload=HTTP_PRELOAD
            )
    curl, ours = runs["curl"], runs["ours"]
    assert ours.returncode == curl.returncode, (name, ours.stderr)
    assert ours.stdout == curl.stdout, name
    assert files(tmp_path / "ours") == files(tmp_path / "curl"), name
    if curl.returncode in (0, 23):  # other errors' words: test_http_errors.py
        assert messages(ours.stderr, "ours") == messages(curl.stderr, "curl"), (
            name,
            ours.stderr,
            curl.stderr,
        )
