"""Every command's exposition passes Prometheus' own linter.

`promtool check metrics` (Prometheus' promlint) reads a scrape and flags
what breaks Prometheus' conventions: a `quantile` label on anything but a
summary, `le` on anything but a histogram, `_count`/`_sum`/`_bucket` names
on the wrong type, counters without `_total`, units not in the name. The
final `--textfile` of real runs (the demo's cpu, iops, warmup, icmp and http
probes; mem; http load mode against a loopback server) must give no line.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from metrics_fixtures import PROBETOP

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus provides it)"
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def loopback_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("www")
    (root / "index.html").write_text("ok\n")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Quiet(*a, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def lint(textfile_dir: Path) -> str:
    assert PROMTOOL is not None
    text = (textfile_dir / "probetop.prom").read_text()
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    return (checked.stdout + checked.stderr).strip()


@pytest.mark.parametrize(
    ("name", "argv", "wanted"),
    [
        (
            "demo",
            ["demo", "--time", "4"],
            ("probetop_cpu_event_latency_quantile_seconds", "probetop_iops_", "smokeping_"),
        ),
        ("mem", ["mem", "--time", "1"], ("probetop_mem_operation_latency_quantile_seconds",)),
        ("load", ["http", "URL", "--rate", "50", "--time", "1"], ("probetop_http_load_",)),
    ],
)
def test_promtool_finds_nothing_to_flag(
    name: str, argv: list[str], wanted: tuple[str, ...], tmp_path: Path, loopback_url: str
) -> None:
    argv = [loopback_url if a == "URL" else a for a in argv]
    run = subprocess.run(
        [*PROBETOP, *argv, "--headless", "--textfile", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    text = (tmp_path / "probetop.prom").read_text()
    for prefix in wanted:  # the run served what this test is about
        assert prefix in text, prefix
    assert lint(tmp_path) == ""
