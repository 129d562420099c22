"""probes/core/ranges.py and machine.py: interval floors, number ranges and what the machine
can hold, checked as arithmetic, against this machine's real /proc, and
against real kernel limits set on a child process (RLIMIT_AS, RLIMIT_NOFILE,
RLIMIT_NPROC as an unprivileged user, a pids cgroup): a clear message naming
the limit and exit 2, never a traceback or an out-of-memory."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from privilege import needs_icmp
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.machine import (
    MachineLimits,
    UnitCost,
    capacity,
    check_capacity,
    logical_cpus,
    oversubscribed,
)
from probetop.probes.core.ranges import (
    INT64_MAX,
    MIN_INTERVAL_S,
    LimitProbeError,
    check_interval,
    check_seconds,
    check_whole,
)

REPO = Path(__file__).resolve().parents[2]
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
THREAD = UnitCost("thread", tasks=1, resident_bytes=100 * 1024, reserved_bytes=260 * 1024)


def probetop(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROBETOP, *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kw,  # type: ignore[arg-type]
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The run refused with exit ``code`` and one 'probetop...: error:' line
    (after argparse's usage lines for a value the parser refuses), no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout[-500:], result.stderr)
    assert "Traceback" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("probetop") and ": error: " in ln]
    assert len(errors) == 1 and errors[0] == lines[-1], result.stderr
    if not lines[0].startswith("usage:"):
        assert len(lines) == 1, result.stderr
    return errors[0]


# -- the checks as arithmetic ---------------------------------------------------


def test_limit_errors_are_usage_errors_with_exit_2():
    assert issubclass(LimitProbeError, UsageProbeError)
    assert LimitProbeError.exit_code == 2 and LimitProbeError.code == "limit"


def test_interval_floor_message_says_what_the_floor_is_and_why():
    check_interval("--interval", MIN_INTERVAL_S)
    with pytest.raises(LimitProbeError) as err:
        check_interval("--interval", 0.0001, floor_s=0.2, why="all 5000 threads are read")
    assert str(err.value) == (
        "--interval 0.0001: the shortest sampling interval this probe can keep is 0.2 s "
        "(all 5000 threads are read); give --interval 0.2 or more"
    )
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(LimitProbeError, match="positive number of seconds"):
            check_interval("--interval", bad)
    with pytest.raises(LimitProbeError, match="longest sampling interval is 3600 s"):
        check_interval("--interval", 1e300)


def test_seconds_and_whole_numbers_stay_within_what_the_arithmetic_holds():
    check_seconds("--time", 0, zero_means="no limit")
    check_seconds("--time", 1e9)
    with pytest.raises(LimitProbeError, match=r"within 0\.\.1000000000 seconds \(or 0: no"):
        check_seconds("--time", 1e300, zero_means="no limit")
    with pytest.raises(LimitProbeError, match="finite"):
        check_seconds("--time", float("nan"))
    check_whole("--count", INT64_MAX)
    with pytest.raises(LimitProbeError, match=r"--count must be within 1\.\.9223372036854775807"):
        check_whole("--count", 10**20, minimum=1)
    with pytest.raises(LimitProbeError, match="whole number"):
        check_whole("--count", 1.5)  # type: ignore[arg-type]


def test_capacity_names_the_binding_limit():
    machine = MachineLimits(
        uid=1000,
        nproc_soft=1000,
        user_tasks=200,
        threads_max=100_000,
        pid_max=32768,
        tasks_now=300,
        mem_available=8 * 2**30,
        as_soft=None,
        nofile_soft=1024,
        open_files=10,
    )
    limits = capacity(THREAD, machine)
    assert limits[0].name == "RLIMIT_NPROC"
    assert limits[0].units == 1000 - 200 - 64
    check_capacity("--threads", 736, THREAD, machine=machine)
    with pytest.raises(LimitProbeError) as err:
        check_capacity("--threads", 737, THREAD, machine=machine)
    assert str(err.value) == (
        "--threads 737: at most 736 threads fit on this machine now, limited by RLIMIT_NPROC: "
        "RLIMIT_NPROC (ulimit -u) is 1000 and your user runs 200 threads, "
        "64 kept free for the rest of the system"
    )
    # root is not held by RLIMIT_NPROC (the kernel does not apply it)
    assert capacity(THREAD, MachineLimits(uid=0, nproc_soft=10, user_tasks=5)) == []


@pytest.mark.parametrize(
    ("machine", "name", "units"),
    [
        (MachineLimits(threads_max=1000, tasks_now=100), "kernel.threads-max", 836),
        (MachineLimits(pid_max=500, threads_max=10**6, tasks_now=100), "kernel.pid_max", 336),
        (MachineLimits(cgroup_pids=(300, 100)), "cgroup pids.max", 136),
        (MachineLimits(mem_available=100 * 2**20), "MemAvailable", 512),
        (MachineLimits(cgroup_memory=(300 * 2**20, 100 * 2**20)), "cgroup memory limit", 1024),
        (MachineLimits(as_soft=2**30, vm_size=512 * 2**20), "RLIMIT_AS", 1764),
        (MachineLimits(commit_room=2**30), "vm.overcommit_memory=2", 3780),
    ],
)
def test_each_limit_counts(machine: MachineLimits, name: str, units: int):
    limits = capacity(THREAD, machine)
    assert (limits[0].name, limits[0].units) == (name, units)
    with pytest.raises(LimitProbeError, match=f"limited by {name}"):
        check_capacity("--threads", units + 1, THREAD, machine=machine)


def test_file_descriptors_and_memory_only_units_count_too():
    stream = UnitCost("stream", tasks=1, files=1, resident_bytes=2**20)
    machine = MachineLimits(nofile_soft=100, open_files=20, mem_available=2**40)
    assert capacity(stream, machine)[0].name == "RLIMIT_NOFILE"
    assert capacity(stream, machine)[0].units == 100 - 20 - 64
    # iodepth-like units: memory, no threads
    slot = UnitCost("queue slot", tasks=0, resident_bytes=2**20, detail="a 1 MiB buffer")
    limits = capacity(slot, MachineLimits(mem_available=2**30, threads_max=10, tasks_now=10))
    assert [lim.name for lim in limits] == ["MemAvailable"]
    assert "1.0 MiB per queue slot (a 1 MiB buffer)" in limits[0].why


def test_this_machine_is_read_for_real():
    machine = MachineLimits.read()
    assert machine.threads_max == int(Path("/proc/sys/kernel/threads-max").read_text())
    assert machine.pid_max == int(Path("/proc/sys/kernel/pid_max").read_text())
    assert machine.tasks_now is not None and machine.tasks_now > 0
    assert machine.mem_available is not None and machine.mem_available > 0
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert machine.nofile_soft == (None if soft == resource.RLIM_INFINITY else soft)
    assert machine.open_files is not None and machine.open_files >= 3
    check_capacity("--threads", 1, THREAD)
    with pytest.raises(LimitProbeError, match="fit on this machine now"):
        check_capacity("--threads", 10**12, THREAD)


def test_cpu_interval_floor_grows_with_threads():
    from probetop.probes.cpu.settings import interval_floor_s

    assert interval_floor_s(1) == MIN_INTERVAL_S
    assert interval_floor_s(1250) == pytest.approx(MIN_INTERVAL_S)
    assert interval_floor_s(5000) == pytest.approx(0.2)


def test_oversubscription_is_per_cpu():
    assert not oversubscribed(2 * logical_cpus())
    assert oversubscribed(2 * logical_cpus() + 1)


# -- the CLI: every out-of-range or overflowing value is one line and exit 2 -----------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--interval", "0.0001", "--headless"), "shortest sampling interval this probe can"),
        (
            ("cpu", "--sample-interval", "0.0001"),
            "--sample-interval 0.0001: the shortest sampling interval",
        ),
        (("cpu", "--threads", "5000"), "logical CPUs (256 per CPU"),
        (
            ("icmp", "--rate", "100", "--streams", "64", "--sample-interval", "0.05", "::1"),
            "merges the counters of 64 streams",
        ),
        (("cpu", "--threads", "500", "--report-interval", "1e-300"), "--report-interval"),
        (("cpu", "--engine", "python", "--threads", "99"), "python-engine threads fit"),
        (("--time", "1e300", "iops", "/tmp/x"), "--time must be within 0..1000000000 seconds"),
        (("--interval", "1e300", "cpu"), "longest sampling interval is 3600 s"),
        (("icmp", "--sample-interval", "0.001", "127.0.0.1"), "--sample-interval 0.001:"),
        (("icmp", "--rate", "1e-300", "127.0.0.1"), "--rate must be within"),
        # (-i 1e-300 is ping's -i 0: whole ms, paced by the replies)
        (("icmp", "-i", "4000", "127.0.0.1"), "send interval (-i) must be within"),
        (("icmp", "--grace", "1e-300", "127.0.0.1"), "--grace must be within 0.001..60"),
        (("icmp", "--flood", "--streams", "64", "127.0.0.1"), "logical CPUs"),
    ],
)
def test_cli_refuses_with_one_line_and_exit_2(args: tuple[str, ...], expected: str):
    line = one_line_error(probetop(*args))
    assert expected in line, line


@pytest.mark.parametrize(
    "args, expected",
    [
        (("icmp", "--count", "1e20", "127.0.0.1"), "not a whole number"),
        (("icmp", "--count", "100000000000000000000", "127.0.0.1"), "--count must be within"),
    ],
)
def test_icmp_refuses_a_huge_count_as_ping_does_with_exit_1(args: tuple[str, ...], expected: str):
    # ping -c 1e20 / -c 100000000000000000000: "invalid argument", exit 1
    line = one_line_error(probetop(*args), code=1)
    assert expected in line, line


@pytest.mark.parametrize(
    "args, expected",
    [
        (("cpu", "--threads", "99999999999999999999"), "'threads' option: '9999"),
        (("cpu", "--events", "99999999999999999999"), "'events' option: '9999"),
        (("--time", "1e300", "cpu"), "Invalid value for the 'time' option: '1e300'"),
        (("mem", "--time", "99999999999"), "Invalid value for the 'time' option"),
    ],
)
def test_sysbench_families_refuse_beyond_an_int_with_exit_1(args: tuple[str, ...], expected: str):
    # sysbench 1.0.20: "Invalid value for the 'threads' option: '...'", exit 1
    # (tests/core/test_sysbench_command_lines.py runs it beside probetop)
    line = one_line_error(probetop(*args), code=1)
    assert expected in line, line


def test_huge_thread_count_is_refused_before_any_memory_is_used():
    """`cpu --threads 1e20` used to allocate until the OOM killer came (now
    sysbench's INT check refuses it first: the largest int is the test)."""
    result = probetop(
        "cpu", "--threads", str(2**31 - 1), "--headless",
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (2**31, 2**31)),
    )  # fmt: skip
    assert "limited by" in one_line_error(result)


# -- real kernel limits on a child process --------------------------------------


def test_rlimit_as_is_named():
    """ulimit -v: the address space the units would reserve (stacks, mapped
    buffers) is checked against RLIMIT_AS minus what the process already maps."""
    code = (
        "from probetop.probes.core.machine import *\n"
        "from probetop.probes.core.ranges import LimitProbeError\n"
        "cost = UnitCost('job', tasks=0, reserved_bytes=64 * 2**20, detail='buffers')\n"
        "check_capacity('--jobs', 2, cost)\n"
        "try:\n"
        "    check_capacity('--jobs', 100, cost)\n"
        "except LimitProbeError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30)),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "--jobs 100: at most" in result.stdout
    assert "limited by RLIMIT_AS: each job reserves 64.0 MiB" in result.stdout
    assert "RLIMIT_AS (ulimit -v) is 2.0 GiB" in result.stdout


@needs_icmp
def test_rlimit_nofile_is_named_for_icmp_streams():
    result = probetop(
        "icmp", "--streams", "4", "--rate", "100", "127.0.0.1", "--headless",
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (70, 70)),
    )  # fmt: skip
    line = one_line_error(result)
    assert "limited by RLIMIT_NOFILE" in line


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not Path("/usr/bin/python3").exists(),
    reason="needs root, setpriv and a system python3 readable by nobody",
)
def test_rlimit_nproc_is_named_for_an_unprivileged_user():
    """RLIMIT_NPROC counts every thread of the user; the kernel applies it only
    to non-root users, so run the check as nobody with `ulimit -u 150`.
    (The venv's python is not readable by nobody: the system python runs
    probes/core/machine.py, which needs only the standard library.)"""
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="probetop-nproc-"))
    tmp_path.chmod(0o755)
    (tmp_path / "probetop").symlink_to(REPO)
    code = (
        "from probetop.probes.core.machine import *\n"
        "from probetop.probes.core.ranges import LimitProbeError\n"
        "cost = UnitCost('thread', tasks=1)\n"
        "check_capacity('--threads', 10, cost)\n"
        "try:\n"
        "    check_capacity('--threads', 200, cost)\n"
        "except LimitProbeError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "/usr/bin/python3", "-s", "-c", code],
        capture_output=True, text=True, timeout=60, cwd="/", env={"PYTHONPATH": str(tmp_path)},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NPROC, (150, 150)),
    )  # fmt: skip
    shutil.rmtree(tmp_path)
    if "Permission denied" in result.stderr:
        pytest.skip(f"the worktree is not readable by nobody: {result.stderr[-200:]}")
    assert result.returncode == 0, result.stderr
    assert "--threads 200: at most" in result.stdout
    assert "limited by RLIMIT_NPROC: RLIMIT_NPROC (ulimit -u) is 150" in result.stdout


def _pids_cgroup() -> Path | None:
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if (base / "cgroup.procs").exists() and (
            (base / "pids.max").exists() or base.name == "pids"
        ):
            return base
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (creates a cgroup)")
def test_cgroup_pids_max_is_named():
    base = _pids_cgroup()
    if base is None:
        pytest.skip("no pids cgroup controller mounted")
    group = base / f"probetop-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup here: {exc}")
    try:
        (group / "pids.max").write_text("400\n")

        def enter() -> None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

        result = probetop("cpu", "--threads", "500", "--headless", preexec_fn=enter)
        line = one_line_error(result)
        assert "limited by cgroup pids.max: the cgroup's pids.max is 400" in line
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                import time

                time.sleep(0.1)


# -- the common options: --time 0 means the same in every command ---------------


def test_time_zero_means_no_limit_for_every_command():
    from probetop.tui.cli.plan import CommonOptions

    assert CommonOptions.from_values({"time": 0.0}, ()).time_limit_s is None
    assert CommonOptions.from_values({}, ()).time_limit_s is None
    assert CommonOptions.from_values({"time": 2.5}, ()).time_limit_s == 2.5
    with pytest.raises(LimitProbeError, match="--time must be within"):
        CommonOptions.from_values({"time": 1e300}, ())
    # the sampling period is --sample-interval in every command: the message names it
    for argv in (("probetop", "cpu"), ("probetop", "icmp", "--sample-interval=0.001", "::1")):
        with pytest.raises(LimitProbeError, match=r"--sample-interval 0\.001: the shortest"):
            CommonOptions.from_values({"interval": 0.001}, argv)


def test_cpu_and_icmp_read_time_zero_as_no_limit():
    from probetop.tui.cli.parser import build_parser, make_plan
    from probetop.tui.commands import load

    icmp_command = load("icmp")

    cpu_plan = make_plan(build_parser().parse_args(["--time", "0", "cpu", "--events", "9"]))
    assert cpu_plan.settings.time_s == 0  # sysbench: no time limit, --events ends it
    icmp_plan = make_plan(build_parser().parse_args(["--time", "0", "icmp", "::1"]))
    assert icmp_command.deadline_s(icmp_plan) is None
    icmp_plan = make_plan(build_parser().parse_args(["--time", "3", "icmp", "::1"]))
    assert icmp_command.deadline_s(icmp_plan) == 3
