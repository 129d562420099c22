"""`probetop demo` runs every probe against its embedded targets and cleans up."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import time

from probetop.probes.core.privileges import has_net_raw, ping_group_allows
from pty_session import PtySession

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def test_demo_headless_runs_every_probe_and_removes_its_scratch_dir(
    tmp_path, native_loops_compiled
):
    # A private TMPDIR: another demo running on the machine (a developer's, a
    # parallel test) creates scratch directories of its own in /tmp.
    pattern = os.path.join(str(tmp_path), "probetop-demo-*")
    before = set(glob.glob(pattern))
    # --time 8: each probe's first interval ends within a second or two of
    # its start; the demo's one-thread cpu probe keeps a core busy for all of
    # --time, so 20 s (when this test also waited for numba's first compile,
    # now done beforehand) cost about 14 CPU-s for what 8 s shows.
    out = subprocess.run(
        [*PROBETOP, "demo", "--json", "--time", "8"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    kinds = {p["kind"] for p in doc["probes"].values()}
    expected = {"system.cpu", "system.disk", "system.net", "cpu", "iops", "warmup", "http"}
    if has_net_raw() or ping_group_allows():
        expected.add("icmp")
    assert expected <= kinds, kinds
    for pid, entry in doc["probes"].items():
        assert entry["error"] is None, (pid, entry["error"])
    # Every active probe produced numbers within eight seconds (the native loops
    # are compiled beforehand: native_loops_compiled).
    for kind in ("cpu", "iops", "http"):
        metrics = next(p["metrics"] for p in doc["probes"].values() if p["kind"] == kind)
        assert any(s["count"] > 0 for s in metrics.values()), (kind, out.stderr[-2000:])
    assert set(glob.glob(pattern)) == before, "demo left its scratch directory behind"


CSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]")


def _wait_for(session, predicate, timeout_s: float) -> bool:
    """``predicate`` of what the app wrote, escape sequences left out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate(CSI.sub("", session.text)):
            return True
        if session.proc.poll() is not None:
            return predicate(CSI.sub("", session.text))
        time.sleep(0.05)
    return False


def _demo_env(tmp_path) -> dict[str, str]:
    return {"TMPDIR": str(tmp_path)}


def test_dashboard_demo_draws_first_and_its_probes_join(tmp_path, native_loops_compiled):
    """The passive panes are drawn before the demo's targets exist; then every
    demo pane joins the same dashboard, and q leaves no scratch directory."""
    pattern = os.path.join(str(tmp_path), "probetop-demo-*")
    session = PtySession.start(["demo"], env=_demo_env(tmp_path))
    try:
        assert _wait_for(session, lambda t: "system.net" in t and "Quit" in t, 60)
        # Text only the joining panes draw (their titles and headers).
        joined = ("max-prime", "read IOPS", "throughput", "TTFB")
        assert _wait_for(session, lambda t: all(k in t for k in joined), 60), session.text[-3000:]
        session.type(b"q")
        assert session.proc.wait(timeout=30) == 0
    finally:
        session.close()
    assert glob.glob(pattern) == [], "demo left its scratch directory behind"


def test_quitting_while_the_demo_probes_join_leaves_nothing_behind(tmp_path, native_loops_compiled):
    """q as soon as the first frame is out, while the worker thread is still
    making the targets (a 128 MiB scratch file) and loading the native loops."""
    pattern = os.path.join(str(tmp_path), "probetop-demo-*")
    for _ in range(3):
        session = PtySession.start(["demo"], env=_demo_env(tmp_path))
        try:
            assert _wait_for(session, lambda t: "Quit" in t, 60)
            session.type(b"q")
            assert session.proc.wait(timeout=30) == 0
        finally:
            session.close()
        assert glob.glob(pattern) == [], "demo left its scratch directory behind"
