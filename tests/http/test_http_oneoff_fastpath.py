"""The console script's one-off path (tui/fastpath.py, issue 28): what it loads,
and that it keeps tui.main's guarantees.

Scripts call `probetop http URL` once per request in loops, so a one-off must
not load what it does not use: the assertion is on ``sys.modules`` after a
real request through the console script's ``main``, not on a timing
(benchmarks/http_oneoff_vs_pycurlb.py measures the time). The other tests
hold what the fast path must do as tui.main does: a secret on the command
line is hidden from ps while the request runs, and a request body's hash in
``--json`` is keyed the same way.
"""

from __future__ import annotations

import json
import marshal
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_fixtures import LocalServer

CONSOLE_SCRIPT = Path(sys.executable).with_name("probetop")

# What a one-off request never needs. Libraries: the dashboard, the JIT, the
# recording codecs, host facts, the metrics exporter; hashlib and ctypes load
# only for a request body's hash or a secret to hide, fractions (and decimal)
# only to parse a duration or a size (-m 5). probetop: the other
# families, tui.main and everything above the CLI, the --assert and --metrics
# parsers' modules, the recording's writer and readers, and http's repeated
# and load modes.
FORBIDDEN_LIBRARIES = (
    "textual",
    "rich",
    "plotext",
    "numba",
    "llvmlite",
    "numpy",
    "scapy",
    "psutil",
    "orjson",
    "msgspec",
    "zstandard",
    "prometheus_client",
    "asyncio",
    "hashlib",
    "ctypes",
    "fractions",
    "decimal",
)
FORBIDDEN_PREFIXES = (
    "probetop.probes.cpu",
    "probetop.probes.mem",
    "probetop.probes.disk",
    "probetop.probes.icmp",
    "probetop.probes.system",
    "probetop.probes.core.hub",
    "probetop.probes.http.load.probe",
    "probetop.probes.http.load.records",
    "probetop.probes.http.probe",
    "probetop.probes.http.records",
    "probetop.probes.http.report",
    "probetop.probes.http.metrics",
    "probetop.probes.http.checks",
    "probetop.tui.main",
    "probetop.tui.ui",
    "probetop.tui.run.launch",
    "probetop.tui.run.runner",
    "probetop.tui.sessions",
    "probetop.tui.analysis",
    "probetop.tui.metrics",
)
# The record package's front door, its redaction and the command-line rewrite
# are used; its codec, writer and readers are not.
RECORD_ALLOWED = {
    "probetop.probes.record",
    "probetop.probes.record.redaction",
    "probetop.probes.record.cmdline",
}

# The console script's main with this process's argv, as `probetop ARGS` runs
# it; the modules loaded are printed after the output, on a line of their own.
RUN_AS_CONSOLE_SCRIPT = """
import json, sys
sys.argv = ["probetop", *json.loads(sys.argv[1])]
from probetop.tui.fastpath import main
code = main()
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
print("EXIT", code)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as srv:
        yield srv


def _one_off_modules(args: list[str]) -> tuple[int, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", RUN_AS_CONSOLE_SCRIPT, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    modules = next(line for line in lines if line.startswith("MODULES "))
    code = next(line for line in lines if line.startswith("EXIT "))
    return int(code.split()[1]), set(json.loads(modules.removeprefix("MODULES ")))


def _forbidden(loaded: set[str]) -> list[str]:
    bad = [m for m in loaded if m.split(".")[0] in FORBIDDEN_LIBRARIES]
    bad += [m for m in loaded if m.startswith(FORBIDDEN_PREFIXES)]
    bad += [
        m for m in loaded if m.startswith("probetop.probes.record.") and m not in RECORD_ALLOWED
    ]
    return sorted(bad)


@pytest.mark.parametrize(
    "options",
    [[], ["--json"], ["-w", "%{http_code} %{time_total}\\n"], ["-s", "-o", "/dev/null"]],
    ids=["waterfall", "json", "write-out", "quiet"],
)
def test_a_one_off_loads_only_what_it_uses(server: LocalServer, options: list[str]) -> None:
    code, loaded = _one_off_modules(["http", *options, f"{server.url}/"])
    assert code == 0
    assert "pycurl" in loaded and "probetop.probes.http.transfer" in loaded  # it did run
    assert _forbidden(loaded) == []


def test_a_failed_one_off_loads_no_more() -> None:
    # Connection refused: curl's exit 7, the message, and the same modules.
    port = _closed_port()
    code, loaded = _one_off_modules(["http", "--json", f"http://127.0.0.1:{port}/"])
    assert code == 7
    assert _forbidden(loaded) == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_one_off_hides_secrets_from_ps_while_it_runs() -> None:
    """`probetop http -u user:PW URL` through the console script: PW leaves
    /proc/PID/cmdline while the request waits (a server that never answers),
    as it does for every other command (tui.main)."""
    secret = f"zq{os.getpid()}pw{time.monotonic_ns() % 100000}"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)  # accepted by the kernel, never answered
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        proc = subprocess.Popen(
            [str(CONSOLE_SCRIPT), "http", "-u", f"bob:{secret}", "-m", "60", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            cmdline = b""
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
                if b"***" in cmdline:
                    break
                time.sleep(0.02)
            assert proc.poll() is None, "the request ended before the check"
            assert b"***" in cmdline and secret.encode() not in cmdline, cmdline
        finally:
            proc.kill()
            proc.wait()


def test_a_body_hash_is_keyed_as_tui_main_keys_it(server: LocalServer) -> None:
    """--json shows a -d body as its length and HMAC, keyed with the install's
    secret: the same from the console script as from tui.main (the fast path
    showed the length only)."""
    args = ["http", "-d", "name=value", "--json", f"{server.url}/echo"]
    docs = []
    for command in ([str(CONSOLE_SCRIPT)], [sys.executable, "-m", "probetop.tui.main"]):
        out = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        docs.append(json.loads(out.stdout)["probetop"]["request"]["data"])
    assert docs[0] == docs[1] and docs[0].startswith("<10 bytes, hmac-sha256:"), docs


def test_a_second_one_off_compiles_no_dataclass_methods(
    server: LocalServer, tmp_path: Path
) -> None:
    """The console script serves the dataclasses' generated methods from the
    cache the first call wrote (tui/run/codecache.py), from the first class
    on (the http family's descriptor), and the second call rewrites nothing."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp_path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    outputs = []
    for _ in range(2):
        out = subprocess.run(
            [str(CONSOLE_SCRIPT), "http", "-w", "%{http_code}\\n", f"{server.url}/"],
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        outputs.append(out.stdout)
        (cache,) = (tmp_path / "probetop-startup").glob("http-one-off-*.marshal")
        if len(outputs) == 1:
            written = cache.stat().st_mtime_ns, cache.stat().st_ino
    assert outputs[0].endswith(b"200\n") and outputs[0] == outputs[1]
    assert (cache.stat().st_mtime_ns, cache.stat().st_ino) == written
    texts = marshal.loads(cache.read_bytes())
    assert any("read_settings" in text for text in texts)  # Family: made before the parse
