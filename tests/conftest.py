"""Shared test helpers: privilege and tool checks that skip with a reason."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]

# The install's kept loops (native_objects.shared_dir, published by `make
# test`'s `probetop compile`) would serve every test that empties its own
# cache to see numba compile (a stop during the first compilation, prunes):
# off for the suite and its children; tests/core/test_shared_objects.py and
# the runs as nobody (a fresh environment) use them.
os.environ["PROBETOP_SHARED_OBJECTS"] = "off"


def is_root() -> bool:
    return os.geteuid() == 0


requires_root = pytest.mark.skipif(
    not is_root(), reason="needs root (loop devices, netns, raw sockets)"
)


def require_tool(name: str) -> str:
    """Path of a command-line tool, or skip the test saying which is missing.
    Looks in sbin too: Debian installs admin tools there, off a user's PATH."""
    path = shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if path is None:
        pytest.skip(f"{name} is not installed (make system-deps installs it)")
    return path


@pytest.fixture
def probetop_cmd() -> list[str]:
    """How to run the CLI from tests, independent of PATH."""
    return list(PROBETOP)


@pytest.fixture(scope="session")
def native_loops_compiled() -> None:
    """The disk and ICMP native loops compiled into numba's on-disk cache, so a
    child process given ``--time N`` spends its N seconds measuring. The first
    run in a fresh clone compiles them inside that clock: over 20 s on a 2-core
    machine at a load average of 8, and the demo's iops pane stayed empty."""
    _compile_native_loops()


def _compile_native_loops() -> None:
    """As ``probetop compile`` (``make setup``): the loops compiled and kept
    as object code, so the tests run the code a user's runs load."""
    from probetop.probes import disk, icmp

    disk.compile_native()
    icmp.compile_native()


@pytest.fixture(scope="session", autouse=True)
def _native_loops_compiled_first(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``native_loops_compiled`` before any test, once for all xdist workers
    (a lock in their shared tmp root: the second loads the first's cache).
    The cache is per source path: in a fresh clone every CLI test's first
    ``iops``/``icmp`` child compiled it inside its own timeout (a ``--time
    0.5`` run passed 60 s at a load average of 24).

    ``PROBETOP_TESTS_NO_NATIVE_WARMUP=1``: for a nested pytest whose tests
    start no native loop (tests/core/test_new_family.py runs the registry
    tests over a copy of the tree, at a path numba's cache has never seen:
    the warm-up compiled both loops there, ~30 CPU-s, for nothing)."""
    if os.environ.get("PROBETOP_TESTS_NO_NATIVE_WARMUP") == "1":
        return
    import fcntl

    root = tmp_path_factory.getbasetemp().parent
    with open(root / "probetop-native-loops.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _compile_native_loops()


_STATE_BEFORE = pytest.StashKey[tuple[Path, set[str]]]()


def _real_state_dir() -> Path:
    """The probetop state directory of the user running the tests, as the
    product finds it (tui/sessions/registry.py) before ``pytest_configure``
    moves it: a relative XDG_STATE_HOME is ignored."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = str(Path.home() / ".local" / "state")
    return Path(base) / "probetop"


def _snapshot(root: Path) -> set[str]:
    """Everything under ``root``, by relative path; empty if it is missing
    (os.walk: a directory removed meanwhile is skipped, not an error)."""
    found = {"."} if root.is_dir() else set()
    for top, dirs, files in os.walk(root):
        found.update(os.path.relpath(os.path.join(top, n), root) for n in dirs + files)
    return found


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin's: the run's tmp root
def pytest_configure(config: pytest.Config) -> None:
    """The state directory (session registry, the body-hash key) and tmux's
    sockets (``tmux -L NAME``) inside this run's tmp root, which pytest prunes:
    a clean clone's run left a key in ~/.local/state/probetop and 26 sockets in
    /tmp/tmux-UID. Here, before collection, not in a session fixture: a test
    module's environment built at import (``ENV = {**os.environ, ...}`` in
    tests/http) kept the real home's, and a run as ptnonroot wrote the key
    there. Short names: a session's socket must stay under 104 bytes.

    First the real state directory is noted (in the process that reports:
    xdist's controller, or the one process without it), for the check below."""
    worker = hasattr(config, "workerinput")
    if not worker:
        state = _real_state_dir()
        config.stash[_STATE_BEFORE] = (state, _snapshot(state))
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    root = base.parent if worker else base  # xdist: the controller's, shared
    for var, name in (("XDG_STATE_HOME", "xdg"), ("TMUX_TMPDIR", "tmux")):
        (root / name).mkdir(mode=0o700, exist_ok=True)
        os.environ[var] = str(root / name)
    if os.environ.get("PROBETOP_TESTS_CPU_LOG"):  # opt-in: CPU and wall per test
        import cputime

        config.pluginmanager.register(cputime, "probetop-cputime")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if the real state directory changed: a test wrote outside
    its tmp dirs (a clean clone's run once left ~/.local/state/probetop/
    body-hmac.key). Files made or removed count, not files that changed: the
    user's own detached session may be writing its recording there meanwhile.
    A probetop run by hand meanwhile, as the same user, could make one too:
    then rerun. A run that failed or was interrupted keeps its own status."""
    noted = session.config.stash.get(_STATE_BEFORE, None)
    if noted is None:
        return
    state, before = noted
    changed = sorted(before ^ _snapshot(state))
    if changed:
        sys.stderr.write(
            f"\nERROR: the tests changed {state} (the real user's probetop state; tests "
            f"must write only under their tmp dirs): {', '.join(changed)}\n"
        )
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per CPU this process may use. About 70 % of a
    worker's time is waiting (tests/cputime.py), so two per CPU would pack
    the cores better, but it is not yet green: with 4 workers on the 2-core
    VM beside a 24-hour soak at nice 19 and other jobs (load 7-87), three
    worktree passes and a clean clone failed 1, 4, 4 and 4 tests of 3,384,
    a different set each time (fixed so far: curl's own time_total race, a
    --time too short for a count, a layout inside --time 1, a wait for text
    that wraps out of the pane; two rate tests made serial); the clean
    clone took 30 min 7 s there, against 21 min 35 s quiet with 2 workers.
    Stop bounds are on the product's own clock (stopclock.py) and the rate,
    ratio and kernel-counter tests are serial. ``make test TEST_JOBS=4``
    runs two workers per CPU."""
    return len(os.sched_getaffinity(0))


# Tests that measure a rate or a ratio against a reference tool, or a
# dashboard's CPU cost: their noise bands hold on a machine with other load,
# not beside a second test worker measuring too. `make test` runs them alone
# in a second pass (`-m serial`) after the parallel one (`-m "not serial"`).
# Everything else is parallel-safe: stop times are the product's own
# (stopclock.py), and namespaces, veths, nft tables, loop devices, tmux
# servers and tmp dirs get unique names per test.
#
# One entry per test of that kind (module path :: function name, parameters
# ignored), and tests that need a machine resource whole (all of the
# kernel's AIO events). Only these: the rest of their modules (machine-code
# and output-format checks, fio's keys and layouts, kernel stamps, cached
# rendering) holds beside other workers and runs in the parallel pass. A
# test may also say so itself, with @pytest.mark.serial (tests/mem does).
SERIAL_TESTS = frozenset(
    {
        # ratios against the reference tool
        "cpu/test_cpu_machine_code.py::test_events_per_cpu_second_match_sysbench_paired",
        "disk/test_iops_fio_parity.py::test_fio_json_fields_match_and_values_agree",
        "disk/test_iops_fio_parity.py::test_async_latencies_mean_what_fios_do",
        "icmp/test_icmp_rtt_stamps.py::test_loopback_rtt_avg_reads_as_ping_does",
        # the idle dashboard's wake-ups, counted over 3 s
        "tui/test_tui_dashcost.py::test_input_thread_sleeps_yet_answers_keys_in_a_real_terminal",
        # significance and rates measured over cpu runs (the regression gate
        # too: recorded beside three other workers, 30000 vs 10000 primes
        # read -14.8 % at p=0.48 instead of about -70 %)
        "analysis/test_compare.py::test_a_real_difference_is_significant_and_a_regression",
        "analysis/test_compare.py::test_compare_assert_regression",
        # queueing latency at --rate 200 and the events/s ratio, both tools:
        # beside three other workers sysbench's own p95 read 123 ms (bound 100)
        "cpu/test_cpu_rate.py::test_sustainable_rate_beside_sysbench",
        # a stall bound in seconds: beside the other workers it measures their load
        "cpu/test_cpu_probe.py::test_thousands_of_threads_never_stall_the_event_loop",
        # tmux redraw timing after 40 resizes: failed 1 in 4 clean runs beside other workers
        "tui/test_tui_hostile_terminal.py::test_a_resize_storm_ends_in_the_last_size_with_the_recording_whole",
        "disk/test_disk_signals.py::test_warmup_with_extreme_options_stops_and_resumes",
        "disk/test_iops_probe.py::test_rate_iops_holds_the_rate_as_fio",
        "disk/test_ioengines.py::test_the_kernel_sees_the_queue_depth_asked_for",
        "icmp/test_icmp_probe.py::test_fixed_rate_holds_within_two_percent",
        # every interval's request rate within 15 % of -i's: a request sent
        # late by a busy machine reads 1.6/s for 2/s (CI run 61, parallel pass)
        "icmp/test_icmp_last_interval.py::test_every_interval_of_a_count_reads_the_rate_asked",
        "icmp/test_icmp_probe.py::test_rtt_means_what_ping_means",
        # a loop device's read counters in /sys/block/NAME/stat against ours:
        # beside other workers, something read 3 % more of one (written
        # sectors hold; alone the counts agree to the byte)
        "disk/test_iops_probe.py::test_probe_counts_agree_with_the_kernel_on_a_loop_device",
        "disk/test_iops_engine.py::test_direct_random_reads_match_the_kernel_counters",
        "disk/test_warmup_probe.py::test_totals_match_fio_and_the_kernel_on_the_same_pass",
        "disk/test_run_ends_at_time.py::test_iops_bytes_agree_with_the_kernel_and_the_intervals",
        # the disk under a loop device read under half of what the probe read
        # (page cache): other workers' I/O on that disk in the same interval
        # made it 40 of 72 MiB (suite2's clean clone, 2026-11-29)
        "disk/test_warmup_plain_words.py::test_the_pane_flags_a_read_rate_the_kernel_cannot_explain",
    }
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m serial`` alone (`make test`'s second pass): import only the test
    modules that can hold a serial test, those named in SERIAL_TESTS and
    those that mark one themselves (the words ``mark.serial`` in the file).
    Collecting the whole suite to run 32 of its tests cost ~15 CPU-s of
    imports. Any other selection collects everything, as pytest does."""
    if config.getoption("markexpr", "") != "serial" or not (
        collection_path.name.startswith("test_") and collection_path.suffix == ".py"
    ):
        return None
    try:
        rel = collection_path.resolve().relative_to(Path(__file__).resolve().parent)
    except ValueError:
        return None
    if rel.as_posix() in SERIAL_FILES:
        return None
    try:
        if "mark.serial" in collection_path.read_text(errors="replace"):
            return None
    except OSError:
        return None
    return True


SERIAL_FILES = frozenset(name.split("::", 1)[0] for name in SERIAL_TESTS)


# Modules holding a test that runs 15-65 s however many cores are free
# (valgrind, a held device's caps, a demo of every probe, deadlines of real
# ping runs, racing processes, a far side over ssh), measured by CPU and wall
# per test over the whole parallel pass. They run first: `--dist worksteal`
# hands each worker a contiguous share of the collection and an idle worker
# takes half of another's remaining queue, so a long test late in a share
# kept one worker busy while the other had nothing left (up to a minute of
# one idle core at the end of the pass). First, the tail is short tests.
LONG_FIRST = (
    "mem/test_mem_instructions.py",
    "disk/test_hung_device.py",
    "tui/test_core_demo.py",
    "core/test_native_cache_prune.py",
    "record/test_record_device_churn_memory.py",
    "core/test_new_family.py",
    "tui/test_remote.py",
    "icmp/test_icmp_count_deadline.py",
    "mem/test_mem_rate.py",
)


# Modules whose tests wait far more than they compute: on a product's own
# deadline (a device held past inflight.HUNG_S, a close held past
# CLOSE_CAP_S), a real sshd's link, curl's retry delays, ICMP replies that
# never come. Measured per test with tests/cputime.py over a whole parallel
# pass: each module below used under 0.1 CPU-s per wall second, set-up
# included, and at least 8 s of wall (the figures below: 2 workers at a load
# average of 13-42, 2026-11-29). Tests whose work runs outside the test's
# own process tree (a dashboard in a tmux server, a detached session) are
# not here: their CPU is not seen there, so their waiting is not shown
# (tui/test_remote.py's far side runs a detached cpu probe for 10 s).
# They carry the ``waits`` marker, so
# `make test WAIT_JOBS=N` can run them in a lane of their own beside the
# parallel pass (N workers that add little CPU, instead of a worker per core
# sitting in their sleeps); without it they run in the parallel pass as
# every other test. A ``serial`` test in one of them stays serial.
WAIT_BOUND = frozenset(
    {
        "disk/test_hung_device.py",  # 176 s wall, 14 CPU-s, 18 tests
        "http/test_http_retry.py",  # 25 s, 1 CPU-s
        "icmp/test_icmp_ping_time.py",  # 24 s, 2 CPU-s
        "record/test_record_stalled_disk.py",  # 22 s, 1 CPU-s
        "icmp/test_icmp_report_outstanding.py",  # 13 s, 1 CPU-s
        "icmp/test_icmp_loss.py",  # 11 s, 0.5 CPU-s
    }
)
# Tests of those modules that stay in the parallel pass: in the lane beside
# two busy workers, its worker was runnable, not in D, at 8 of 10 looks (the
# test's own "this test shows nothing" check failed). http/test_load_stall.py
# is not in the lane at all: its p99 against wrk's read 49.2 ms apart, the
# bound 46.9 ms (5 %), there.
WAIT_BOUND_EXCEPT = frozenset({"disk/test_hung_device.py::test_a_slow_device_is_not_called_held"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests_dir = Path(__file__).resolve().parent
    rank: dict[int, int] = {}
    for i, item in enumerate(items):
        try:
            rel = item.path.resolve().relative_to(tests_dir).as_posix()
        except ValueError:
            continue
        name = getattr(item, "originalname", None) or item.name
        if f"{rel}::{name}" in SERIAL_TESTS:
            item.add_marker(pytest.mark.serial)
        if rel in WAIT_BOUND and f"{rel}::{name}" not in WAIT_BOUND_EXCEPT:
            item.add_marker(pytest.mark.waits)
        if rel in LONG_FIRST:
            rank[i] = LONG_FIRST.index(rel)
    # Stable: each module's tests stay together and in their order (module
    # fixtures are set up once), the listed modules in LONG_FIRST's order.
    order = sorted(range(len(items)), key=lambda i: rank.get(i, len(LONG_FIRST)))
    items[:] = [items[i] for i in order]
