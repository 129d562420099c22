"""The IOPS probe end to end: CLI, fio-shaped JSON, intervals, cancellation, bad input."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import kernel_io, loop_device, promptly_scheduled, run_cli, summary_of
from probetop.probes.core.base import ProbeError
from probetop.probes.core.hub import Hub
from probetop.probes.disk import FIO_PERCENTILES, IopsProbe, IopsSettings, pct_key

fast_dir = disk_fixtures.fast_dir  # the fixture, under the name tests ask for


def test_json_is_fio_shaped_and_intervals_add_up(fast_dir):
    target = fast_dir / "t.img"
    proc = run_cli(
        [
            "iops", str(target), "--size", "8M", "--rw", "randrw", "--rwmixread", "70",
            "--time", "2", "--interval", "0.5", "--json",
        ]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = summary_of(proc.stdout)
    for name in ("read", "write"):
        d = doc[name]
        assert set(d) >= {"iops", "bw_bytes", "io_bytes", "total_ios", "runtime_ms", "clat_ns"}
        assert d["total_ios"] > 0 and d["io_bytes"] == d["total_ios"] * 4096
        assert abs(d["iops"] - d["total_ios"] / (d["runtime_ms"] / 1000)) < 0.01 * d["iops"]
        assert set(d["clat_ns"]["percentile"]) == {pct_key(p) for p in FIO_PERCENTILES}
        assert d["clat_ns"]["min"] <= d["clat_ns"]["percentile"]["50.000000"] <= d["clat_ns"]["max"]
    share = doc["read"]["total_ios"] / (doc["read"]["total_ios"] + doc["write"]["total_ios"])
    assert 0.65 < share < 0.75
    assert 1900 <= doc["runtime_ms"] <= 2600
    rows = doc["intervals"]
    assert 3 <= len(rows) <= 6
    # Per-interval rates x each interval's own length add up to the totals (not
    # cumulative values). Its measured length, not the nominal 0.5 s: under load
    # a tick comes late and the last row is short (a rate x 0.5 was 1.5x the total).
    for name in ("read", "write"):
        assert sum(r[f"{name}_total_ios"] for r in rows) == doc[name]["total_ios"]
        summed = sum(r[f"{name}_iops"] * r["seconds"] for r in rows)
        assert summed == pytest.approx(doc[name]["total_ios"], rel=0.01)
    assert sum(r["seconds"] for r in rows) == pytest.approx(doc["runtime_ms"] / 1000, abs=0.05)
    assert doc["fio_command"].startswith("fio --filename=")
    assert doc["fio_command"].endswith(" --name=probetop")  # --group_reporting only when asked
    assert "--rwmixread=70" in doc["fio_command"]


def test_text_report_and_buffered_one_byte_sync_writes(fast_dir):
    target = fast_dir / "efs.img"
    proc = run_cli(
        [
            "iops", str(target), "--size", "4k", "--rw", "write", "--bs", "1", "--sync",
            "--buffered", "--jobs", "2", "--time", "1", "--headless",
        ]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "write: IOPS=" in proc.stdout
    assert "--bs=1 " in proc.stdout and "--direct=0" in proc.stdout and "--sync=1" in proc.stdout


async def test_cancel_leaves_no_worker_behind(fast_dir):
    target = fast_dir / "c.img"
    probe = IopsProbe(IopsSettings(str(target), size=4 << 20, jobs=2, iodepth=4, interval_s=0.2))
    hub = Hub()
    hub.add(probe)
    sub = hub.subscribe()
    hub.start()
    # Until a sample arrives (after the JIT warm-up): a deadline, not a number
    # of wake-ups (status records wake the wait too).
    deadline = asyncio.get_running_loop().time() + 60
    seen: list = []
    while not any(getattr(r, "values", None) for r in seen):
        assert asyncio.get_running_loop().time() < deadline, f"no sample in 60 s: {seen}"
        seen += await sub.wait(0.2)
    await hub.stop()
    left = [t for t in threading.enumerate() if t.name.startswith("probetop-io-")]
    assert not left, (left, hub.errors, probe.errors)
    summary = hub.summaries[probe.id]
    assert summary["read"]["total_ios"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/x"], "no such file"),
        (["/tmp"], "is a directory"),
        (["/dev/null"], "character device"),
        (["--bs", "4k", "SMALL"], "smaller than the block size"),
        (["--bs", "1", "--direct", "FILE"], "multiples of"),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path, args, message):
    small = tmp_path / "small.img"
    small.write_bytes(b"x" * 1000)
    big = tmp_path / "big.img"
    big.write_bytes(b"x" * 65536)
    args = [str(small) if a == "SMALL" else str(big) if a == "FILE" else a for a in args]
    proc = run_cli(["iops", *args, "--time", "1", "--headless"])
    assert proc.returncode == 2
    assert message in proc.stderr.lower()


def _iops_as_another_user(target: Path) -> subprocess.CompletedProcess[str]:
    """``iops TARGET --time 1 --headless`` as nobody when we are root, else as
    this user; skipped where nobody cannot run this Python or its venv."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    proc = subprocess.run(
        [*(prefix if os.geteuid() == 0 else []), *disk_fixtures.PROBETOP,
         "iops", str(target), "--time", "1", "--headless"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if "No module named" in proc.stderr or "error while loading shared libraries" in proc.stderr:
        pytest.skip("this Python or its venv is not readable by nobody")
    return proc


def test_permission_denied_for_an_unprivileged_user(tmp_path):
    """A file this user may not read: one line saying whose it is and how to
    get access. Root checks it as nobody; any other user as itself (mode 0)."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run as another user")
    # Outside pytest's 0700 base directory, so nobody can reach the file.
    where = Path(tempfile.mkdtemp(prefix="probetop-perm-"))
    try:
        where.chmod(0o755)
        target = where / "private.img"
        target.write_bytes(b"x" * 65536)
        target.chmod(0o600 if os.geteuid() == 0 else 0o000)
        proc = _iops_as_another_user(target)
    finally:
        shutil.rmtree(where)
    assert proc.returncode == 2, proc.stderr
    owner = pwd.getpwuid(os.geteuid()).pw_name
    mode = "0600" if os.geteuid() == 0 else "0000"
    (line,) = proc.stderr.splitlines()
    assert "permission denied (no read access to this file" in line, line
    assert f"mode {mode}" in line and f"Run as {owner}" in line and "setfacl" in line, line


def test_a_directory_on_the_way_that_this_user_may_not_enter_is_named(tmp_path):
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run as another user")
    where = Path(tempfile.mkdtemp(prefix="probetop-perm-"))
    try:
        where.chmod(0o755)
        locked = where / "locked"
        locked.mkdir()
        (locked / "data.img").write_bytes(b"x" * 65536)
        locked.chmod(0o700 if os.geteuid() == 0 else 0o000)
        proc = _iops_as_another_user(locked / "data.img")
    finally:
        locked.chmod(0o700)
        shutil.rmtree(where)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    owner = pwd.getpwuid(os.geteuid()).pw_name
    assert f"permission denied (your user may not enter {locked}: {owner}:" in line, line
    assert f"Run as {owner} or choose a target outside it" in line, line


def test_writes_to_a_device_holding_a_filesystem_are_refused(tmp_path):
    with loop_device(32 << 20) as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        probe = IopsProbe(IopsSettings(dev, rw="randwrite"))
        with pytest.raises(ProbeError, match="ext4"):
            probe.prepare()


def test_probe_counts_agree_with_the_kernel_on_a_loop_device():
    with loop_device(64 << 20) as dev:
        before = kernel_io(dev)
        probe = IopsProbe(
            IopsSettings(dev, rw="randread", bs=4096, iodepth=8, time_s=0.5, interval_s=0.25)
        )
        probe.prepare()
        asyncio.run(probe.run(lambda r: None))
        after = kernel_io(dev)
    ours = probe.summary()["read"]
    # Enough I/O for the comparison to mean something; not a speed check (on a
    # loaded 2-core machine 0.5 s gave 376 I/Os).
    assert ours["total_ios"] > 50
    # Every byte we count was read from the device (O_DIRECT). The kernel may
    # see a little more: udev's blkid probes a new loop device when it likes
    # (seen: 11 MB more in a 1.5 GB run while other loop devices came and
    # went on the machine; 2-3 % of a 0.5 s run while parallel test workers
    # made loop devices of their own), so the margin is 1 MiB + 4 %.
    kernel_bytes = (after[1] - before[1]) * 512
    assert ours["io_bytes"] <= kernel_bytes <= ours["io_bytes"] * 1.04 + (1 << 20)
    assert sum(r["read_iops"] * 0.25 for r in probe.intervals) == pytest.approx(
        ours["total_ios"], rel=0.1
    )


def test_ramp_intervals_are_shown_but_not_counted(fast_dir):
    target = fast_dir / "r.img"
    probe = IopsProbe(
        IopsSettings(str(target), size=4 << 20, ramp_s=0.5, time_s=0.5, interval_s=0.25)
    )
    probe.prepare()
    asyncio.run(probe.run(lambda r: None))
    summary = probe.summary()
    ramp = [r for r in probe.intervals if r["ramp"]]
    measured = [r for r in probe.intervals if not r["ramp"]]
    assert len(ramp) == 2 and len(measured) == 2
    assert 400 <= summary["runtime_ms"] <= 650
    counted = summary["read"]["total_ios"]
    assert counted == pytest.approx(sum(r["read_iops"] * 0.25 for r in measured), rel=0.15)
    assert "--ramp_time=500ms" in summary["fio_command"]  # fio reads a bare 0.5 as 0


def test_writes_to_a_blank_device_need_the_confirmation():
    with loop_device(16 << 20) as dev:
        with pytest.raises(ProbeError, match=f"--yes-destroy-data={dev}"):
            IopsProbe(IopsSettings(dev, rw="randwrite")).prepare()
        IopsProbe(IopsSettings(dev, rw="randwrite", confirmed=True)).prepare()
        IopsProbe(IopsSettings(dev, rw="randread")).prepare()  # reads need nothing
        wrong = run_cli(["iops", dev, "--rw", "write", "--yes-destroy-data=/dev/sdz", "--json"])
        assert wrong.returncode == 2 and "does not name the target" in wrong.stderr


@pytest.mark.parametrize("engine", ["psync", "libaio"])
def test_rate_iops_holds_the_rate_as_fio(fast_dir, engine):
    """fio --rate_iops=2000 does 2,000/s. The pacer added each wake-up's
    lateness (timer slack, ~0.1 ms) to every 0.5 ms gap: ~1,670/s quiet, less
    under load. Now ~1,980/s quiet; a loaded machine (wake-ups later than a
    whole gap restart the grid) measured 1,880/s, hence the 0.9. The child
    runs at real-time priority where it may (it inherits it): beside a CPU
    hog and a parallel test run it delivered 860-1,110/s, the scheduler's
    figure, not the pacer's."""
    target = fast_dir / "rate.img"
    with promptly_scheduled():
        proc = run_cli(
            [
                "iops", str(target), "--size", "8M", "--rw", "randwrite", "--buffered",
                "--ioengine", engine, "--iodepth", "1", "--rate-iops", "2000",
                "--time", "2", "--json",
            ]
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    iops = summary_of(proc.stdout)["write"]["iops"]
    assert 0.9 * 2000 <= iops <= 1.01 * 2000, iops
