"""`probetop demo` runs every probe against its embedded targets and cleans up."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

from probetop.probes.core.privileges import has_net_raw, ping_group_allows

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def test_demo_headless_runs_every_probe_and_removes_its_scratch_dir(
    tmp_path, native_loops_compiled
):
    # A private TMPDIR: another demo running on the machine (a developer's, a
    # parallel test) creates scratch directories of its own in /tmp.
    pattern = os.path.join(str(tmp_path), "probetop-demo-*")
    before = set(glob.glob(pattern))
    out = subprocess.run(
        [*PROBETOP, "demo", "--json", "--time", "20"],
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
    # Every active probe produced numbers within twenty seconds (the native loops
    # are compiled beforehand: native_loops_compiled).
    for kind in ("cpu", "iops", "http"):
        metrics = next(p["metrics"] for p in doc["probes"].values() if p["kind"] == kind)
        assert any(s["count"] > 0 for s in metrics.values()), (kind, out.stderr[-2000:])
    assert set(glob.glob(pattern)) == before, "demo left its scratch directory behind"
