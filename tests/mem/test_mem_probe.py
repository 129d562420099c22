"""probetop mem: options, the engine's work, sysbench's report layout and
figures (against the installed sysbench), JSON, bad input, Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from forkserver import RUN_PRELOAD, run_probetop
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.sysbench.counters import STAT_CPU_NS, STAT_DONE, STAT_EVENTS
from probetop.probes.mem import MemInterval, MemProbe, MemSettings, parse_report
from probetop.probes.mem.engine import (
    ROW_BUDGET,
    ROW_BUF,
    ROW_RNG,
    SharedHistogram,
    SharedRun,
    ThreadJob,
    load_engine,
    new_rows,
    setup_row,
)

PROBETOP = str(Path(sys.executable).with_name("probetop"))
needs_sysbench = pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench")


def probetop(
    *args: str, timeout: float = 120, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """``probetop mem ARGS``: forked from an interpreter that has imported the
    CLI, the mem family, numpy and numba (tests/forkserver.py: a process of
    its own with this argv, stdio, environment, threads and exit status; the
    ~0.6 CPU-s of start-up spared), or with ``fresh`` the installed
    ``probetop`` script (test_help_names_every_sysbench_option;
    test_report_lines_up_with_sysbenchs_up_to_the_figures starts the whole
    `python -m`)."""
    if not fresh:
        return run_probetop(["mem", *args], timeout=timeout, preload=RUN_PRELOAD)
    return subprocess.run(
        [PROBETOP, "mem", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def sysbench(*args: str) -> str:
    return subprocess.run(
        ["sysbench", "memory", *args, "run"], capture_output=True, text=True, check=True
    ).stdout


def one_job(
    mode: str, oper: str, words: int, budget: int, *, percentile: float = 95
) -> tuple[ThreadJob, np.ndarray, np.ndarray]:
    """One thread's job over a zeroed block of ``words`` words; ``budget``
    operations (sysbench's per-thread share of --memory-total-size; -1: none)."""
    rows = new_rows(1)
    hist = SharedHistogram()
    buf = np.zeros(words, np.int64)
    shared = SharedRun()
    load_engine().setup(
        shared,
        mode=mode,
        oper=oper,
        block_size=words * 8,
        total_size=0 if budget < 0 else budget * words * 8,
        percentile=percentile,
        hist=hist,
        rows=rows,
    )
    setup_row(
        rows[0],
        buffer_address=int(buf.ctypes.data),
        budget=max(budget, 0),
        rng=(0x9E3779B97F4A7C15, 12345),
    )
    shared.refs.append(buf)
    return ThreadJob(shared, 0, rows[0]), buf, hist.counts


# -- the engine does sysbench's work -------------------------------------------------


@pytest.mark.parametrize("words", [1, 4, 8, 128])
def test_seq_write_stores_end_minus_p_in_every_word(words: int) -> None:
    job, buf, hist = one_job("seq", "write", words, 3)
    assert load_engine().run(job) == 3  # the budget ended it
    assert buf.tolist() == [words - i for i in range(words)]  # sysbench: end - buf
    assert int(job.row[STAT_EVENTS]) == 3 and int(hist.sum()) == 3
    assert job.row[STAT_DONE] == 3 and job.row[STAT_CPU_NS] > 0


def test_rnd_write_stores_byte_indexes_at_random_words() -> None:
    job, buf, _hist = one_job("rnd", "write", 128, 50)
    load_engine().run(job)
    values = set(buf.tolist()) - {0}
    assert values and all(v % 8 == 0 and v < 1024 for v in values)
    assert len(values) > 50  # scattered, not one word


@pytest.mark.parametrize("mode", ["seq", "rnd"])
def test_writes_stay_inside_the_block(mode: str) -> None:
    """Every store lands inside the block: the words just before and after
    it (guards in the same array) stay zero, whatever the offsets drawn."""
    words, guard = 64, 64
    job, _buf, _hist = one_job(mode, "write", words, 1)
    arena = np.zeros(guard + words + guard, np.int64)
    job.row[ROW_BUF] = int(arena.ctypes.data) + guard * 8
    job.row[ROW_BUDGET] = 400
    assert load_engine().run(job) == 3
    assert not arena[:guard].any() and not arena[guard + words :].any()
    assert arena[guard : guard + words].any()


@pytest.mark.parametrize(("mode", "oper"), [("seq", "read"), ("seq", "none"), ("rnd", "read")])
def test_read_and_none_leave_the_block_alone(mode: str, oper: str) -> None:
    job, buf, _hist = one_job(mode, oper, 64, 100)
    load_engine().run(job)
    assert not buf.any() and int(job.row[STAT_EVENTS]) == 100


def test_deadline_ends_the_loop() -> None:
    job, buf, hist = one_job("seq", "write", 128, -1)  # kept: the loop writes them
    job.shared.set_clock(time.monotonic_ns(), 100_000_000)
    t = time.monotonic()
    assert load_engine().run(job) == 2
    assert time.monotonic() - t < 5
    assert int(hist.sum()) == int(job.row[STAT_EVENTS]) > 0 and buf[0] == 128


def test_events_file_their_latency_in_sysbenchs_shared_histogram() -> None:
    """One histogram for all threads, 128 rows picked at random per event (as
    sb_histogram_update), not one per thread: 2 threads share its cache lines."""
    job, _buf, hist = one_job("seq", "write", 128, 4000)
    assert load_engine().run(job) == 3
    assert hist.shape == (128, 1024) and int(hist.sum()) == 4000
    assert int((hist.sum(axis=1) > 0).sum()) > 100  # spread over the rows
    assert job.row[ROW_RNG] != 0x9E3779B97F4A7C15 - (1 << 64)  # the generator moved


def test_percentile_0_skips_the_histogram_as_sysbench() -> None:
    job, _buf, hist = one_job("seq", "read", 128, 500, percentile=0)
    assert load_engine().run(job) == 3
    assert int(job.row[STAT_EVENTS]) == 500 and int(hist.sum()) == 0


def test_rnd_none_touches_no_word() -> None:
    job, buf, hist = one_job("rnd", "none", 64, 100)
    assert load_engine().run(job) == 3
    assert not buf.any() and int(hist.sum()) == 100


def test_each_thread_runs_on_its_row_of_the_block() -> None:
    # the engine finds a thread's timer and counter by thread id, as sysbench
    # indexes its arrays: a row that is not rows[tid] of setup's block is refused
    job, _, _ = one_job("seq", "write", 8, 10)
    with pytest.raises(ValueError, match="row"):
        load_engine().run(ThreadJob(job.shared, 1, job.row))
    assert load_engine().run(job) == 3 and int(job.row[STAT_EVENTS]) == 10


# -- settings and bad input ----------------------------------------------------------


def test_defaults_are_sysbenchs() -> None:
    s = MemSettings()
    assert (s.block_size, s.total_size, s.scope, s.oper, s.access_mode, s.time_s) == (
        1024, 100 << 30, "global", "write", "seq", 10.0
    )  # fmt: skip
    assert MemSettings(threads=3, total_size=10 << 20).ops_per_thread() == (10 << 10) // 3


@pytest.mark.parametrize("block", [4, 1000, 3 << 10])
def test_block_size_must_be_a_power_of_two_of_8_or_more(block: int) -> None:
    with pytest.raises(UsageProbeError, match="--memory-block-size"):
        MemSettings(block_size=block).validate()


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--memory-block-size", "1000"], "power of two"),
        (["--memory-block-size", "lots"], "size"),
        (["--memory-scope", "shared"], "memory-scope"),
        (["--memory-oper", "copy"], "memory-oper"),
        (["--memory-access-mode", "zigzag"], "memory-access-mode"),
        (["--threads", "0"], "--threads"),
    ],
)
def test_bad_input_exits_1_with_a_message(args: list[str], word: str) -> None:
    """sysbench's status for a refused value (tests/core/test_sysbench_command_lines.py)."""
    out = probetop(*args, "--headless")
    assert out.returncode == 1, out.stderr
    assert word in out.stderr and "Traceback" not in out.stderr


# -- the run -------------------------------------------------------------------------


def test_total_size_ends_each_thread_after_its_share() -> None:
    out = probetop(
        "--threads", "2", "--memory-total-size", "10M", "--memory-scope", "local", "--json"
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["total_events"] == 10 * 1024  # 10M / 1K / 2 threads x 2
    assert doc["per_thread_events"] == [5120, 5120]
    assert doc["stopped_by"] == "total_size"
    assert doc["mib_transferred"] == pytest.approx(10.0)
    assert doc["fairness"]["events_stddev"] == 0.0


async def test_probe_emits_intervals_and_a_final_summary() -> None:
    probe = MemProbe(MemSettings(time_s=0.6, interval_s=0.2, oper="read"))
    probe.prepare()
    samples = []
    await probe.run(samples.append)
    intervals = [MemInterval.from_sample(s) for s in samples]
    assert intervals[-1].final and intervals[-1].summary is not None
    assert sum(sum(iv.per_thread_ops) for iv in intervals) == probe.summary()["total_events"]
    full = [iv for iv in intervals if not iv.final]
    assert full and all(iv.ops and iv.mibs == pytest.approx(iv.ops / 1024) for iv in full)


async def test_blocks_are_private_memory_as_sysbenchs_heap() -> None:
    """sysbench's blocks are posix_memalign'd heap: private pages, one per
    thread with --memory-scope=local (Python's anonymous mmap is shared)."""
    probe = MemProbe(MemSettings(time_s=0, total_size=64 << 10, threads=2, scope="local"))
    probe.prepare()
    await probe.run(lambda _sample: None)
    blocks = [int(a) for a in probe._stats[:, ROW_BUF]]
    assert len(set(blocks)) == 2 and all(a % os.sysconf("SC_PAGE_SIZE") == 0 for a in blocks)
    perms = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, mode = line.split()[:2]
        lo, hi = (int(x, 16) for x in span.split("-"))
        perms += [mode for a in blocks if lo <= a < hi]
    assert perms == ["rw-p", "rw-p"], perms


async def test_cancel_keeps_what_ran() -> None:
    probe = MemProbe(MemSettings(time_s=30, interval_s=0.2))
    probe.prepare()
    samples: list = []
    task = asyncio.create_task(probe.run(samples.append))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    s = probe.summary()
    assert s["stopped_by"] == "stop" and s["total_events"] > 0 and s["total_time"] < 10
    assert MemInterval.from_sample(samples[-1]).final


def test_ctrl_c_prints_the_partial_report_and_exits_130(tmp_path: Path) -> None:
    rec = tmp_path / "mem.jsonl"
    proc = subprocess.Popen(
        [
            PROBETOP,
            "mem",
            "--headless",
            "--time",
            "60",
            "--sample-interval",
            "0.2",
            "--record",
            str(rec),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Signal once the run is measuring (its samples reach the recording), not
    # after a fixed sleep: start-up takes seconds on a loaded machine.
    deadline = time.monotonic() + 60
    while not (rec.exists() and rec.read_text().count('"type":"sample"') >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    doc = parse_report(out)
    assert doc["interrupted"] and doc["total_events"] > 0 and doc["total_time"] < 60


# -- against the installed sysbench -----------------------------------------------


def _shape(text: str) -> list[str]:
    """The report from "Total operations" on, numbers replaced by N and the
    padding before right-aligned numbers by one space (widths follow the
    values); every latency line still ends at sysbench's column 53."""
    lines = text[text.index("Total operations") :].rstrip("\n").splitlines()
    assert all(len(ln) == 53 for ln in lines if re.match(r"^ {9}[\w ]+:\s+[\d.]+$", ln))
    return [re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?", "N", line)) for line in lines]


@needs_sysbench
@pytest.mark.parametrize("oper", ["write", "none"])
def test_report_layout_is_sysbenchs_line_for_line(oper: str) -> None:
    ours = probetop("--time", "1", "--headless", "--memory-oper", oper)
    assert ours.returncode == 0, ours.stderr
    theirs = sysbench("--time=1", f"--memory-oper={oper}")
    assert _shape(ours.stdout) == _shape(theirs)
    a, b = parse_report(ours.stdout), parse_report(theirs)  # one parser, both tools
    assert a.keys() == b.keys()
    for key in ("threads", "block_kib", "total_mib", "oper", "scope"):
        assert a[key] == b[key]


@needs_sysbench
@pytest.mark.parametrize("extra", [[], ["--report-interval=1"]])
def test_whole_output_has_sysbenchs_empty_lines(extra: list[str]) -> None:
    """Every line of the output, empty ones included, from the banner to the
    closing empty line (sysbench's last interval line may or may not come at
    --time, so interval lines are set apart): none after the interval lines,
    one at the very end."""

    def shape(text: str) -> list[str]:
        assert text.endswith("\n\n"), text[-80:]  # the closing empty line
        lines = [ln for ln in text.split("\n")[1:] if not ln.startswith("[ ")]
        return [re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?", "N", ln)) for ln in lines]

    ours = probetop("--time=2", *extra, "run")
    assert ours.returncode == 0, ours.stderr
    theirs = sysbench("--time=2", *extra)
    assert shape(ours.stdout) == shape(theirs)
    if extra:  # the last interval line is followed by "Total operations" at once
        assert re.search(r"^\[ 2s \] .*\nTotal operations", ours.stdout, re.MULTILINE)


@needs_sysbench
@pytest.mark.serial  # a ratio against sysbench: alone, after the parallel pass
@pytest.mark.parametrize(
    "opts",
    [
        {"memory-oper": "write"},
        {"memory-oper": "read", "memory-block-size": "1M"},
        {"memory-access-mode": "rnd"},
    ],
)
def test_figures_agree_with_sysbench_under_load(opts: dict[str, str]) -> None:
    """Paired, alternated runs; the median ratio of operations per CPU-second
    of the workers within 0.6-1.6. Per CPU-second, since the wall-clock rate
    follows the share of a core each run happened to get (CI once saw a
    wall-clock 0.27x in two of three pairs); sysbench's CPU is its process's
    (wait4), ours the workers' thread clocks (the JSON's per_thread). A loop
    doing 2x the work per operation, or half, fails
    (benchmarks/mem_vs_sysbench.py measures the ratio properly)."""
    per_cpu: list[float] = []
    wall: list[float] = []
    for i in range(3):
        runs = {}
        for tool in ("sysbench", "probetop") if i % 2 == 0 else ("probetop", "sysbench"):
            runs[tool] = _one_run(tool, opts)
        per_cpu.append(runs["probetop"][1] / runs["sysbench"][1])
        wall.append(runs["probetop"][0] / runs["sysbench"][0])
    assert 0.6 < statistics.median(per_cpu) < 1.6, (per_cpu, wall)


def _one_run(tool: str, opts: dict[str, str]) -> tuple[float, float]:
    """(operations per second, operations per CPU-second) of one 1 s run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if tool == "sysbench":
        doc = parse_report(sysbench("--time=1", *(f"--{k}={v}" for k, v in opts.items())))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # sysbench's main thread sleeps while its worker runs
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    else:
        out = probetop(
            "--time",
            "1",
            "--headless",
            "--json",
            *(x for kv in opts.items() for x in (f"--{kv[0]}", kv[1])),
        )
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        cpu_s = sum(t["cpu_time_s"] for t in doc["per_thread"])
    return float(doc["ops_per_second"]), doc["total_events"] / cpu_s


def test_help_names_every_sysbench_option() -> None:
    out = probetop("--help", fresh=True)
    for flag in (
        "--memory-block-size",
        "--memory-total-size",
        "--memory-scope",
        "--memory-oper",
        "--memory-access-mode",
        "--threads",
        "--time",
        "--report-interval",
    ):
        assert flag in out.stdout
    assert os.path.exists(PROBETOP)


def test_interval_rows_are_bounded_however_long_the_run() -> None:
    """Issue 29: one row per interval for the life of the probe; now the
    newest MAX_KEPT_INTERVALS, the older ones counted."""
    from probetop.probes.core.intervallog import MAX_KEPT_INTERVALS, IntervalLog
    from probetop.probes.mem import format_report

    probe = MemProbe(MemSettings(time_s=0, total_size=1 << 30))
    assert isinstance(probe.intervals, IntervalLog)
    for i in range(MAX_KEPT_INTERVALS + 7):
        probe.intervals.append({"t": float(i), "mibs": 1.0, "full": True})
    s = probe.summary()
    assert len(s["intervals"]) == MAX_KEPT_INTERVALS and s["intervals_dropped"] == 7
    assert "NOTE: the first 7 interval lines were not kept" in format_report(s, show_intervals=True)


@needs_sysbench
@pytest.mark.parametrize("extra", [[], ["--report-interval=1", "--time=1"]])
def test_report_lines_up_with_sysbenchs_up_to_the_figures(extra: list[str]) -> None:
    """Every line before the first figure is sysbench's, but the banner's
    parenthesis (what really ran): a script that skips sysbench's preamble by
    counting lines, or matches ``sysbench (\\d+)\\.(\\d+)``, reads ours."""
    args = ["memory", "--memory-total-size=16M", *extra, "run"]

    def preamble(cmd: list[str]) -> list[str]:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
        lines = out.splitlines()
        return lines[: lines.index("Threads started!") + 1]

    ours = preamble([sys.executable, "-m", "probetop.tui.main", "mem", *args[1:]])
    theirs = preamble(["sysbench", *args])
    assert re.match(r"sysbench 1\.0\.20 \(using probetop [^,]+, \w+ engine\)$", ours[0]), ours[0]
    assert re.match(r"sysbench (\d+)\.(\d+)", ours[0])
    assert ours[1:] == theirs[1:]


HIST_TITLE = "Latency histogram (values are in milliseconds)"
HIST_HEADER = "       value  ------------- distribution ------------- count"
HIST_ROW = re.compile(r"^( {0,11}\d+\.\d{3}) \|([* ]{40}) (\d+)$")


@needs_sysbench
@pytest.mark.parametrize("extra", [["--histogram=on"], ["--histogram", "--report-interval=1"]])
def test_histogram_is_sysbenchs(extra: list[str]) -> None:
    """``--histogram`` means what it means in sysbench memory (and in
    ``probetop cpu``): sysbench's block of bucket rows, each bar scaled to
    the largest count, the counts adding up to the operations, then a
    one-space line and "Total operations" at once; the rest of the whole
    output is sysbench's, empty lines included."""
    import math

    mult = 1023 / (math.log(100000) - math.log(0.001))
    values = {f"{math.exp(i / mult + math.log(0.001)):12.3f}" for i in range(1024)}
    ours = probetop("--time=1", "--memory-total-size=64M", *extra, "run")
    assert ours.returncode == 0, ours.stderr
    theirs = sysbench("--time=1", "--memory-total-size=64M", "--histogram=on", *extra[1:])
    shapes = []
    for text in (ours.stdout, theirs):
        lines = text.split("\n")
        rows = [m for m in map(HIST_ROW.match, lines) if m]
        assert rows, text
        top = max(int(m.group(3)) for m in rows)
        for m in rows:
            assert m.group(1) in values
            assert len(m.group(2).rstrip()) == int(int(m.group(3)) * 40.0 / top + 0.5)
        assert sum(int(m.group(3)) for m in rows) == parse_report(text)["total_events"]
        rest = [ln for ln in lines if not HIST_ROW.match(ln) and not ln.startswith("[ ")]
        at = rest.index(HIST_TITLE)
        assert rest[at + 1 : at + 3] == [HIST_HEADER, " "]
        assert rest[at + 3].startswith("Total operations: ")
        shapes.append([re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?", "N", ln)) for ln in rest[1:]])
    assert shapes[0] == shapes[1]
