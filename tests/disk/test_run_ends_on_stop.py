"""A disk run stopped by a signal, the dashboard's q or ``probetop stop`` has
interval rows that add up to its totals, as one that ends at ``--time``.

The loops always reaped and counted the I/Os in flight at a stop, but the
probe emitted no row for them: what completed after the last tick was in
the totals and in no row (on a loop device at depth 16, a stop 1.5 s in
left ~0.5 s of I/O out of the rows). Now the last row ends at the last
completion whatever ended the run. Real loop devices over /dev/shm, every
engine; the report, the recording's footer and the exit status as before.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from disk_fixtures import PROBETOP, kernel_io, loop_device
from probetop.probes.disk import ioengines
from probetop.probes.record import load_session
from pty_session import PtySession

SIGNALS = [signal.SIGINT, signal.SIGTERM]


def engines() -> list[str]:
    names = ["psync", "libaio"]
    if ioengines.resolve("io_uring", 8)[0] == "io_uring":
        names.append("io_uring")
    return names


def depth(engine: str) -> str:
    return "1" if engine == "psync" else "16"


def samples(rec: Path) -> int:
    """The disk probe's samples in the recording so far (the dashboard's
    passive panes have theirs too)."""
    try:
        data = rec.read_bytes()
    except OSError:
        return 0
    return data.count(b'"type":"sample","probe":"iops:') + data.count(
        b'"type":"sample","probe":"warmup:'
    )


def wait_until(predicate: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def footer_summary(rec: Path, reason: str | None) -> dict:
    """The disk probe's summary in the recording's footer (the dashboard's
    passive panes have theirs too)."""
    session = load_session(rec)
    assert session.footer is not None, session.warnings
    if reason is not None:
        assert session.footer["reason"] == reason
    (summary,) = [
        s for key, s in session.footer["summaries"].items() if key.startswith(("iops:", "warmup:"))
    ]
    return summary


def check_iops_rows(summary: dict, direction: str) -> None:
    """The rows' exact counts add up to the totals, their lengths to the
    measured window (runtime is it rounded up to whole ms)."""
    rows = [r for r in summary["intervals"] if not r["ramp"]]
    totals = summary[direction]
    assert totals["total_ios"] > 0
    assert sum(r[f"{direction}_io_bytes"] for r in rows) == totals["io_bytes"], rows
    assert sum(r[f"{direction}_total_ios"] for r in rows) == totals["total_ios"], rows
    window_ms = sum(r["seconds"] for r in rows) * 1000
    assert totals["runtime"] - 1.01 <= window_ms <= totals["runtime"] + 0.01, (window_ms, totals)


def check_warmup_rows(doc: dict) -> None:
    (row,) = [p for p in doc["passes"] if p["outcome"] != "not started"]
    rows = doc["intervals"]
    assert row["bytes"] > 0
    assert sum(r["bytes"] for r in rows) == row["bytes"], rows
    assert sum(r["total_ios"] for r in rows) == row["total_ios"], rows


def signalled(args: list[str], sig: int, rec: Path) -> tuple[int, str, str]:
    """Run probetop headless until its recording has an interval, then send
    ``sig``: (exit status, stdout, stderr)."""
    proc = subprocess.Popen(
        [*PROBETOP, *args, "--record", str(rec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_until(lambda: samples(rec) >= 1 or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.3)  # into the next interval: I/O after the last row
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        return proc.returncode, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_iops_stopped_by_a_signal_has_rows_that_add_up(tmp_path: Path, engine: str, sig: int):
    rec = tmp_path / "rec.jsonl"
    with loop_device(64 << 20) as dev:
        before = kernel_io(dev)
        code, out, err = signalled(
            ["iops", dev, "--rw", "randread", "--ioengine", engine, "--iodepth", depth(engine),
             "--json"], sig, rec,
        )  # fmt: skip
        after = kernel_io(dev)
    assert code == 128 + sig, err  # README: 130 SIGINT, 143 SIGTERM, after the report
    doc = json.loads(out)
    check_iops_rows(doc["probetop"], "read")
    name = signal.Signals(sig).name
    check_iops_rows(footer_summary(rec, f"interrupted ({name})"), "read")
    # every byte the kernel read is in the totals (udev may read a little more)
    ours = doc["jobs"][0]["read"]["io_bytes"]
    assert ours <= (after[1] - before[1]) * 512 <= ours * 1.04 + (1 << 20)


@pytest.mark.parametrize("engine", engines())
def test_warmup_stopped_by_a_signal_has_rows_that_add_up(tmp_path: Path, engine: str):
    """A paced read pass (it would take minutes) cut by SIGINT: its rows add
    up to the pass's bytes (the I/O after the last tick was in no row)."""
    rec = tmp_path / "rec.jsonl"
    with loop_device(256 << 20) as dev:
        code, out, err = signalled(
            ["warmup", dev, "--ioengine", engine, "--iodepth", depth(engine), "--bs", "4k",
             "--rate-iops", "3000", "--checkpoint", str(tmp_path / "c.json"), "--json"],
            signal.SIGINT, rec,
        )  # fmt: skip
    assert code == 130, err
    doc = json.loads(out)
    assert doc["outcome"] == "stopped", doc
    check_warmup_rows(doc)
    check_warmup_rows(footer_summary(rec, "interrupted (SIGINT)"))


def test_iops_stopped_in_the_dashboard_has_rows_that_add_up(tmp_path: Path):
    """q in the dashboard: the recording's footer has rows that add up."""
    rec = tmp_path / "rec.jsonl"
    with loop_device(64 << 20) as dev:
        app = PtySession.start(
            ["iops", dev, "--rw", "randread", "--ioengine", "libaio", "--iodepth", "16",
             "--record", str(rec)]
        )  # fmt: skip
        try:
            wait_until(lambda: samples(rec) >= 1 or app.proc.poll() is not None)
            assert app.proc.poll() is None, app.text[-800:]
            time.sleep(0.3)
            app.type(b"q")
            app.proc.wait(timeout=60)
        finally:
            app.close()
    assert app.proc.returncode == 0, app.text[-800:]
    check_iops_rows(footer_summary(rec, None), "read")


@pytest.fixture
def session_env() -> Iterator[dict[str, str]]:
    """Private runtime and state directories (a socket path holds 107 bytes:
    a short one in /tmp)."""
    base = tempfile.mkdtemp(prefix="timeend-", dir="/tmp")
    env = dict(os.environ, XDG_RUNTIME_DIR=f"{base}/run", XDG_STATE_HOME=f"{base}/state")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    try:
        yield env
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_detached_iops_stopped_by_probetop_stop_has_rows_that_add_up(
    tmp_path: Path, session_env: dict[str, str]
):
    rec = tmp_path / "rec.jsonl"

    def probetop(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*PROBETOP, *args], env=session_env, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    with loop_device(64 << 20) as dev:
        started = probetop(
            "iops", dev, "--rw", "randread", "--ioengine", "libaio", "--iodepth", "16",
            "--detach", "--name", "rowsum", "--record", str(rec),
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        try:
            wait_until(lambda: samples(rec) >= 1)
            time.sleep(0.3)
        finally:
            stopped = probetop("stop", "rowsum")
    assert stopped.returncode == 0, stopped.stderr
    check_iops_rows(footer_summary(rec, "interrupted (SIGTERM)"), "read")
