"""The CPU probe end to end: intervals, fairness, limits, sweep, cancellation, record/replay."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.sample import Sample
from probetop.probes.core.sysbench.hist import HIST_SIZE, bucket_of
from probetop.probes.cpu import CpuSettings
from probetop.probes.cpu.probe import CpuProbe, PhaseResult, ThreadSnapshot
from probetop.probes.record.reader import load_session
from probetop.tui.run.runner import run_headless

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "core"))
from stop_harness import wait_for_samples
from stopclock import StopClock

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def _worker_processes() -> list[Path]:
    """This process's children (the CPU probe's worker processes among them)."""
    me = os.getpid()
    kids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:  # ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me and fields[0] != "Z":
            kids.append(proc)
    return kids


def cpu_threads() -> list[str]:
    """Every CPU worker of this process: the native engine's are native
    threads (OS name "probetop-cpu", never in threading.enumerate()), of this
    process or of a worker process it forked (SCHED_IDLE workers); the
    Python engine's are Python threads named probetop-cpu-N."""
    native = []
    for proc in [Path("/proc/self"), *_worker_processes()]:
        try:
            tasks = list((proc / "task").iterdir())
        except OSError:  # ended while we looked
            continue
        for task in tasks:
            try:
                if (task / "comm").read_text().strip() == "probetop-cpu":
                    native.append(task.name)
            except OSError:  # the thread ended while we looked
                pass
    python = [t.name for t in threading.enumerate() if t.name.startswith("probetop-cpu-")]
    return native + python


def snap(events: int, lat_sum_ns: int) -> ThreadSnapshot:
    hist = [0] * HIST_SIZE
    hist[bucket_of(0.5)] = events
    return ThreadSnapshot(events, lat_sum_ns, 400_000, 600_000, hist)


def test_fairness_is_population_stddev_and_time_avg_is_sum_over_threads() -> None:
    phase = PhaseResult(threads=3, total_time_s=2.0)
    phase.per_thread = [snap(100, 1_900_000_000), snap(110, 1_950_000_000), snap(120, 2e9)]
    phase.per_thread[2].lat_sum_ns = 2_000_000_000
    d = phase.as_dict(95)
    f = d["fairness"]
    assert f["events_avg"] == pytest.approx(110.0)
    assert f["events_stddev"] == pytest.approx(math.sqrt(200 / 3))  # population, not sample
    assert f["time_avg"] == pytest.approx((1.9 + 1.95 + 2.0) / 3)
    mean_t = (1.9 + 1.95 + 2.0) / 3
    pop = math.sqrt(sum((x - mean_t) ** 2 for x in (1.9, 1.95, 2.0)) / 3)
    assert f["time_stddev"] == pytest.approx(pop)
    assert d["events_per_second"] == pytest.approx(330 / 2.0)
    assert d["latency_ms"]["sum"] == pytest.approx(5850.0)
    assert d["latency_ms"]["avg"] == pytest.approx(5850.0 / 330)
    assert d["latency_ms"]["min"] == pytest.approx(0.4)
    assert d["latency_ms"]["max"] == pytest.approx(0.6)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threads": 0},
        {"max_prime": 2},
        {"time_s": -1.0},
        {"events": -5},
        {"percentile": -1.0},  # 0 is sysbench's "disabled"
        {"percentile": 101.0},
    ],
)
def test_bad_parameters_are_refused(kwargs: dict) -> None:
    with pytest.raises(UsageProbeError):
        CpuSettings(**kwargs).validate()


async def test_intervals_are_per_interval_rates_that_add_up() -> None:
    probe = CpuProbe(CpuSettings(threads=2, time_s=1.6, interval_s=0.5, max_prime=5000))
    result = await run_headless([probe])
    samples = result.samples["cpu"]
    s = result.summaries["cpu"]
    assert 3 <= len(samples) <= 5
    assert s["stopped_by"] == "time"
    # Ends at the deadline plus the event in progress and the wait for a CPU
    # to see it (1.709 s at load 7 beside the parallel tests): never before.
    assert 1.59 <= s["total_time"] <= 2.0, s["total_time"]
    total = 0
    for sample, row in zip(samples, s["intervals"], strict=True):
        per_thread = sample.extra["per_thread_events"]
        events = sum(per_thread)
        total += events
        if sample.values["eps"] is not None:
            assert sample.values["eps"] == pytest.approx(events / sample.interval_s)
        else:  # only a last sliver of an interval has no rate
            assert sample is samples[-1] and sample.interval_s < 0.25
        assert sample.values["thread_events@t0"] == per_thread[0]
        assert sample.values["threads"] == 2
        assert row["events"] == events
    assert total == s["total_events"]  # per-interval, not cumulative
    assert [r["full"] for r in s["intervals"]][-1] is False
    assert all(r["full"] for r in s["intervals"][:-1])
    assert s["events_per_second"] == pytest.approx(s["total_events"] / s["total_time"])
    assert s["primes"] == 668  # primes in 3..4999 (2 is not counted)
    assert sum(p["events"] for p in s["per_thread"]) == s["total_events"]
    assert sum(int(v) for v in s["histogram"].values()) == s["total_events"]


async def test_a_stalled_loop_gives_one_longer_interval_not_a_burst() -> None:
    """A UI that blocks the loop for 5 intervals: the next sample spans the
    stall (its rate is still right), and no near-empty intervals follow."""
    samples: list[Sample] = []
    probe = CpuProbe(CpuSettings(threads=1, time_s=2.2, interval_s=0.2, max_prime=3000))
    probe.prepare()
    task = asyncio.get_running_loop().create_task(probe.run(samples.append))
    while not any(isinstance(smp, Sample) for smp in samples):  # measuring
        await asyncio.sleep(0.01)
    time.sleep(1.0)  # block the event loop, as a long render would
    await task
    sizes = [smp.interval_s for smp in samples if isinstance(smp, Sample)]
    assert max(sizes) > 0.9  # the stalled interval
    assert min(sizes[:-1]) > 0.05  # no burst of near-empty catch-up intervals
    total = sum(sum(smp.extra["per_thread_events"]) for smp in samples)
    assert total == probe.summary()["total_events"]


async def test_event_limit_is_exact_across_threads() -> None:
    probe = CpuProbe(CpuSettings(threads=2, time_s=0, events=301, max_prime=3000))
    result = await run_headless([probe])
    s = result.summaries["cpu"]
    assert s["total_events"] == 301
    assert s["stopped_by"] == "events"


async def test_cancellation_stops_and_joins_every_worker() -> None:
    probe = CpuProbe(CpuSettings(threads=3, time_s=60, max_prime=20000, interval_s=0.2))
    probe.prepare()
    records: list = []
    task = asyncio.get_running_loop().create_task(probe.run(records.append))
    deadline = time.monotonic() + 60  # measuring: a sample counted (slow under load)
    while not any(isinstance(r, Sample) for r in records) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(cpu_threads()) == 3, records
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cpu_threads() == []
    s = probe.summary()
    assert s["stopped_by"] == "stop"
    assert s["total_events"] > 0
    assert s["total_time"] < 5


async def test_cancel_ends_a_huge_event_at_once_and_does_not_count_it() -> None:
    """--max-prime 2e9: one event would take hours; stopping must not wait for it."""
    probe = CpuProbe(CpuSettings(threads=2, time_s=60, max_prime=2_000_000_000, interval_s=0.2))
    probe.prepare()
    task = asyncio.get_running_loop().create_task(probe.run(lambda record: None))
    await asyncio.sleep(0.5)
    clock = StopClock(os.getpid()).start()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    took = clock.stop()
    assert took.own_s < 2.0, str(took)
    assert cpu_threads() == []
    assert probe.summary()["total_events"] == 0


async def test_sweep_runs_each_thread_count_and_reports_efficiency() -> None:
    probe = CpuProbe(CpuSettings(time_s=0.4, max_prime=3000, sweep=True, sweep_counts=[1, 2, 3]))
    result = await run_headless([probe])
    s = result.summaries["cpu"]
    rows = s["sweep"]
    assert [r["threads"] for r in rows] == [1, 2, 3]
    assert rows[0]["speedup"] == pytest.approx(1.0)
    assert rows[0]["efficiency"] == pytest.approx(1.0)
    for r in rows:
        assert r["events_per_second"] > 0
        assert r["efficiency"] == pytest.approx(r["speedup"] / r["threads"])
        assert r["total_time"] == pytest.approx(0.4, abs=0.15)
    phases = {smp.extra.get("phase") for smp in result.samples["cpu"]}
    assert phases == {0, 1, 2}
    assert s["threads"] == 3  # top-level figures are the last run's
    from probetop.probes.cpu.report import format_report, parse_report

    text = format_report(s, show_intervals=True)
    assert "Number of threads: 1,2,3 (sweep" in text
    assert "Thread sweep" in text and "-- 2 threads:" in text
    table = text[text.index("Thread sweep") :].splitlines()[2:5]
    assert [int(line.split()[0]) for line in table] == [1, 2, 3]
    parsed = parse_report(text)
    assert parsed["total_events"] == s["total_events"]  # the last run's block
    assert "threads" not in parsed  # a sweep has no single thread count


async def test_record_and_replay_a_cpu_session(tmp_path: Path) -> None:
    path = tmp_path / "cpu.jsonl"
    probe = CpuProbe(CpuSettings(threads=1, time_s=1.2, interval_s=0.5, max_prime=3000))
    result = await run_headless([probe], record=path, command=["probetop", "cpu"])
    session = load_session(path)
    assert session.warnings == []
    assert session.probes["cpu"]["kind"] == "cpu"
    assert "sysbench cpu --threads=1" in session.probes["cpu"]["reference_command"]
    assert session.footer is not None
    footer = session.footer["summaries"]["cpu"]
    assert footer["total_events"] == result.summaries["cpu"]["total_events"]
    replayed = [r for _, r in session.records() if isinstance(r, Sample) and r.probe == "cpu"]
    live = result.samples["cpu"]
    assert len(replayed) == len(live)
    assert [r.values["eps"] for r in replayed] == [r.values["eps"] for r in live]
    assert sum(sum(r.extra["per_thread_events"]) for r in replayed) == footer["total_events"]


async def test_python_engine_is_labelled_everywhere() -> None:
    from probetop.probes.cpu.report import format_report

    probe = CpuProbe(CpuSettings(threads=1, time_s=0, events=5, max_prime=500, engine="python"))
    result = await run_headless([probe])
    s = result.summaries["cpu"]
    assert s["engine"] == "python"
    assert s["comparable_with_sysbench"] is False
    assert s["label"] == "python engine: not comparable with sysbench"
    assert s["total_events"] == 5
    text = format_report(s)
    assert text.count("python engine: not comparable with sysbench") == 2


# -- the command line ---------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["--threads", "0"],
        ["--max-prime", "2"],
        ["--time", "-1"],
        ["--threads", "x"],
    ],
)
def test_cli_bad_input_exits_1_with_a_message(argv: list[str]) -> None:
    """sysbench's status for a refused value (tests/core/test_sysbench_command_lines.py)."""
    out = subprocess.run(
        [*PROBETOP, "cpu", *argv, "--headless"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1
    assert "error" in out.stderr
    assert out.stdout == ""


def test_cli_json_has_the_issue_fields() -> None:
    out = subprocess.run(
        [*PROBETOP, "cpu", "--json", "--time", "1", "--threads", "2", "--max-prime", "3000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in ("events_per_second", "total_events", "total_time", "threads", "max_prime"):
        assert key in doc
    assert set(doc["latency_ms"]) >= {"min", "avg", "max", "p50", "p95", "p99", "sum"}
    assert set(doc["fairness"]) == {"events_avg", "events_stddev", "time_avg", "time_stddev"}
    assert doc["intervals"] and {"eps", "lat_pct_ms"} <= set(doc["intervals"][0])
    assert doc["engine"] == "llvm"
    assert doc["sweep"] is None
    assert doc["threads"] == 2 and doc["max_prime"] == 3000
    assert doc["interrupted"] is False


def test_cli_ctrl_c_reports_what_ran_and_leaves_no_worker(tmp_path: Path) -> None:
    rec = tmp_path / "cpu.jsonl"
    proc = subprocess.Popen(
        [*PROBETOP, "--record", str(rec), "cpu", "--headless", "--threads", "2", "--time", "60",
         "--interval", "0.25"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        # Wait until the workers have counted events (start-up is slow on a
        # loaded machine: a fixed wait after the threads appeared was not enough).
        wait_for_samples(rec, "cpu", 2, proc)
        assert _threads_of(proc.pid) >= 3
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "INTERRUPTED (SIGINT)" in out
    from probetop.probes.cpu.report import parse_report

    doc = parse_report(out)
    assert doc["interrupted"] is True
    assert doc["total_events"] > 0
    assert doc["total_time"] < 30
    # the process is gone, so no thread of it is left; no child process either
    assert not os.path.exists(f"/proc/{proc.pid}/status") or _is_zombie(proc.pid)


def _children_of(pid: int) -> list[int]:
    kids = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text() if proc.name.isdigit() else ""
        except OSError:  # ended while we looked
            continue
        if stat and int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            kids.append(int(proc.name))
    return kids


def test_a_killed_probetop_takes_its_worker_process_with_it(tmp_path: Path) -> None:
    """SCHED_IDLE workers run in a worker process of their own session
    (docs/cpu.md): SIGKILL of probetop, which no handler sees, still ends
    that process (PR_SET_PDEATHSIG), never leaving its threads computing."""
    from probetop.probes.core.machine import logical_cpus

    rec = tmp_path / "cpu.jsonl"
    threads = 3 * logical_cpus()  # more than 2 per CPU: SCHED_IDLE, a worker process
    proc = subprocess.Popen(
        [*PROBETOP, "--record", str(rec), "cpu", "--headless", "--threads", str(threads),
         "--time", "60", "--interval", "0.25"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_samples(rec, "cpu", 2, proc)
        kids = [k for k in _children_of(proc.pid) if _threads_of(k) >= threads]
        assert len(kids) == 1, kids
        assert os.getsid(kids[0]) == kids[0] != os.getsid(proc.pid)
        proc.kill()
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _is_zombie(kids[0]):
            time.sleep(0.05)
        # gone, or a zombie waiting for init: none of its threads computes
        assert _is_zombie(kids[0]), f"worker process {kids[0]} outlived probetop"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _owners(tids: list[str]) -> set[int]:
    """The processes (thread group ids) these threads belong to."""
    owners = set()
    for tid in tids:
        try:
            with open(f"/proc/{tid}/status", encoding="ascii") as f:
                owners.update(int(line.split()[1]) for line in f if line.startswith("Tgid:"))
        except (OSError, ValueError):  # ended meanwhile
            pass
    return owners


def _threads_of(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return any(line.startswith("State:\tZ") for line in f)
    except OSError:
        return True


async def test_time_is_kept_even_inside_a_huge_event() -> None:
    """--max-prime 2**31-1: the engine checks --time only between events, and
    one event takes hours. The probe stops it at --time + END_GRACE_S."""
    from probetop.probes.cpu.probe import END_GRACE_S

    probe = CpuProbe(CpuSettings(threads=2, time_s=0.5, max_prime=2**31 - 1, interval_s=0.2))
    probe.prepare()
    started = time.monotonic()
    await probe.run(lambda record: None)
    assert time.monotonic() - started < 0.5 + END_GRACE_S + 1.0
    s = probe.summary()
    assert s["stopped_by"] == "time"
    assert s["total_events"] == 0  # the cut events are not counted
    assert 0.5 <= s["total_time"] < 0.5 + END_GRACE_S + 0.5
    assert cpu_threads() == []


async def _worst_timer_lateness(sleeps: int = 50) -> float:
    """The most a 10 ms asyncio sleep overran, over ``sleeps`` sleeps."""
    worst = 0.0
    for _ in range(sleeps):
        t0 = time.monotonic()
        await asyncio.sleep(0.01)
        worst = max(worst, time.monotonic() - t0 - 0.01)
    return worst


async def test_thousands_of_threads_never_stall_the_event_loop() -> None:
    """More threads than 2 per CPU run as SCHED_IDLE native threads (the
    kernel says so for every one of them) in a worker process of a session
    of its own: the loop keeps its timers (a 10 ms sleep never overruns by
    0.5 s more than it did just before, on this machine's own load) while
    the most threads allowed compute, and stopping them is bounded. A loaded
    machine alone (load 70) made a sleep overrun by 1.7 s: the allowance is
    the lateness measured before the probe. With the workers in this
    process's session, beside one CPU-bound process, sleeps overran by
    0.13-3.4 s (docs/cpu.md)."""
    from probetop.probes.core.machine import logical_cpus
    from probetop.probes.cpu.settings import MAX_THREADS_PER_CPU

    most = MAX_THREADS_PER_CPU * logical_cpus()
    before = await _worst_timer_lateness()
    probe = CpuProbe(CpuSettings(threads=most, time_s=60, max_prime=10000, interval_s=0.2))
    probe.prepare()
    records: list = []
    task = asyncio.get_running_loop().create_task(probe.run(records.append))
    while not any(isinstance(r, Sample) for r in records):
        await asyncio.sleep(0.05)
    workers = cpu_threads()
    # in a worker process of their own session (so their own autogroup):
    # in this process's scheduling group they kept its thread off the CPU
    # (the sessions of the processes that hold the workers: other children of
    # this process, left by earlier tests, are no part of it)
    worker_sessions = {os.getsid(owner) for owner in _owners(workers)}
    policies = set()
    for tid in workers:
        try:
            policies.add(os.sched_getscheduler(int(tid)))
        except (ProcessLookupError, ValueError):  # ended meanwhile / a Python thread name
            pass
    worst = await _worst_timer_lateness()
    stop = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - stop < 1.0
    assert len(workers) == most and policies == {os.SCHED_IDLE}, (len(workers), policies)
    assert len(worker_sessions) == 1 and os.getsid(0) not in worker_sessions, worker_sessions
    assert worst < 0.5 + 2 * before, (
        f"the loop stalled {worst:.2f} s (before the probe: {before:.2f} s)"
    )
    s = probe.summary()
    assert s["workers_sched_idle"] is True and s["threads"] == most
    assert s["worker_errors"] == [] and s["total_events"] > 0
