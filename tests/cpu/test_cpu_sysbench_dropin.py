"""`probetop cpu` as a drop-in for `sysbench cpu run` (issue 27, want 4).

The same sysbench command line runs under both tools, and one parser, written
the way sysbench users parse its output (regexes on the report's lines, as in
the shell and Python scripts that scrape it; not probetop's parse_report),
reads both. The fields it finds, their types, the banner's version, the
report's line skeleton and the [ Ns ] lines must agree.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from typing import Any

import pytest
from forkserver import RUN_PRELOAD, run_probetop

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (apt-get install {name})")
    return path


# -- a sysbench user's parser (kept apart from probetop's own) ---------------

VERSION = re.compile(r"^sysbench (\d+\.\d+\.\d+) \((.*)\)$", re.M)
FIELDS = {
    "threads": re.compile(r"^Number of threads: (\d+)$", re.M),
    "max_prime": re.compile(r"^Prime numbers limit: (\d+)$", re.M),
    "eps": re.compile(r"events per second:\s+([\d.]+)"),
    "total_time": re.compile(r"total time:\s+([\d.]+)s"),
    "events": re.compile(r"total number of events:\s+(\d+)"),
    "lat_min": re.compile(r"^\s+min:\s+([\d.]+)$", re.M),
    "lat_avg": re.compile(r"^\s+avg:\s+([\d.]+)$", re.M),
    "lat_max": re.compile(r"^\s+max:\s+([\d.]+)$", re.M),
    "lat_pct": re.compile(r"^\s+(\d+)th percentile:\s+([\d.]+)$", re.M),
    "lat_sum": re.compile(r"^\s+sum:\s+([\d.]+)$", re.M),
    "fair_events": re.compile(r"events \(avg/stddev\):\s+([\d.]+)/([\d.]+)"),
    "fair_time": re.compile(r"execution time \(avg/stddev\):\s+([\d.]+)/([\d.]+)"),
}
INTERVAL = re.compile(r"^\[ (\d+)s \] thds: (\d+) eps: ([\d.]+) lat \(ms,(\d+)%\): ([\d.]+)$", re.M)


def parse(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    m = VERSION.search(text)
    out["version"] = m.group(1) if m else None
    for key, rx in FIELDS.items():
        m = rx.search(text)
        out[key] = tuple(float(g) for g in m.groups()) if m else None
    out["intervals"] = [
        (int(t), int(thds), float(eps), int(p), float(lat))
        for t, thds, eps, p, lat in INTERVAL.findall(text)
    ]
    return out


def skeleton(text: str) -> list[str]:
    """The report's lines with every number (and the padding before it, which
    varies with its width in sysbench too) blanked, and the interval lines
    dropped (their count is compared apart): what a line-numbered script
    depends on."""
    lines = [ln for ln in text.splitlines() if not INTERVAL.match(ln)]
    return [re.sub(r" *\d+(\.\d+)?", " #", ln) for ln in lines]


def run(cmd: list[str], *, fresh: bool = False) -> str:
    """stdout of ``cmd`` (exit 0). ``probetop`` runs are forked from an
    interpreter that has imported the CLI, the cpu family, numpy and numba
    (tests/forkserver.py: a process of its own with this argv, stdio,
    threads and exit status; ~0.5 CPU-s of start-up spared), unless
    ``fresh`` (the module's report beside sysbench's: the whole `python -m`)."""
    if cmd[: len(PROBETOP)] == PROBETOP and not fresh:
        done = run_probetop(cmd[len(PROBETOP) :], timeout=120, preload=RUN_PRELOAD)
    else:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


SYSBENCH_ARGS = [
    "--threads=1",
    "--time=3",
    "--report-interval=1",
    "--cpu-max-prime=3000",
    "--percentile=99",
]


def test_report_beside_sysbenchs() -> None:
    """One run of each (3 s: a module fixture ran once per xdist worker that
    took one of its tests), three checks: the same fields read from both,
    line for line, and the interval lines."""
    sysbench = require_tool("sysbench")
    theirs = run([sysbench, "cpu", *SYSBENCH_ARGS, "run"])
    ours = run([*PROBETOP, "cpu", *SYSBENCH_ARGS, "run"], fresh=True)
    one_parser_reads_the_same_fields_from_both(theirs, ours)
    report_is_line_for_line_sysbench(theirs, ours)
    interval_lines_end_at_time(theirs, ours)


def one_parser_reads_the_same_fields_from_both(theirs_text: str, ours_text: str) -> None:
    theirs, ours = parse(theirs_text), parse(ours_text)
    assert theirs["version"] == ours["version"] == "1.0.20"
    for key in FIELDS:
        assert theirs[key] is not None, key
        assert ours[key] is not None, (key, ours_text)
        assert len(theirs[key]) == len(ours[key])
    assert ours["threads"] == theirs["threads"] == (1.0,)
    assert ours["max_prime"] == theirs["max_prime"] == (3000.0,)
    assert ours["lat_pct"][0] == theirs["lat_pct"][0] == 99.0
    assert ours["events"][0] > 0 and abs(ours["total_time"][0] - 3.0) < 0.3


def report_is_line_for_line_sysbench(theirs_text: str, ours_text: str) -> None:
    theirs, ours = skeleton(theirs_text), skeleton(ours_text)
    # The banner's parenthesis names what ran (sysbench: its Lua runtime).
    assert VERSION.match(theirs_text.splitlines()[0]) and VERSION.match(ours_text.splitlines()[0])
    assert len(ours) == len(theirs) > 25
    assert ours[0].endswith("engine)")
    assert ours[1:] == theirs[1:]


def interval_lines_end_at_time(theirs_text: str, ours_text: str) -> None:
    """sysbench prints one [ Ns ] line per second, the last at --time when its
    report thread wins the race with the end (on a busy machine it may not);
    probetop always prints the last one, at exactly --time."""
    theirs, ours = parse(theirs_text)["intervals"], parse(ours_text)["intervals"]
    assert [row[0] for row in ours] == [1, 2, 3]
    assert [row[0] for row in theirs] == [1, 2, 3][: len(theirs)] and len(theirs) >= 2
    assert {row[1] for row in ours} == {1} and {row[3] for row in ours} == {99}


def test_events_mode_and_disabled_percentile_match_sysbench() -> None:
    sysbench = require_tool("sysbench")
    args = ["--events=500", "--time=0", "--percentile=0", "--cpu-max-prime=2000"]
    theirs = run([sysbench, "cpu", *args, "run"])
    ours = run([*PROBETOP, "cpu", *args])
    assert skeleton(ours)[1:] == skeleton(theirs)[1:]
    assert "percentile stats:               disabled" in ours
    assert parse(ours)["events"] == parse(theirs)["events"] == (500.0,)


def test_sweep_takes_a_list_of_thread_counts() -> None:
    ours = run([*PROBETOP, "cpu", "--sweep", "1,3", "--time", "0.3", "--max-prime", "500"])
    rows = re.findall(r"^\s+(\d+)\s+[\d.]+\s+(?:[\d.]+x|-)", ours, re.M)
    assert rows == ["1", "3"]
    assert "Number of threads: 1,3 (sweep" in ours
    assert parse(ours)["threads"] is None  # a sweep is no single sysbench run


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sweep", "1,x"], "not a list of thread counts"),
        (["--sweep", "2,2"], "listed twice"),
        (["--sweep", "0,1"], "must be 1 or more"),
        (["stop"], "Unknown command: stop"),  # sysbench's words
    ],
)
def test_bad_sysbench_style_input_exits_1(args: list[str], message: str) -> None:
    """sysbench's status for a refused value or command (`sysbench cpu stop`:
    "Unknown command", 1); tests/core/test_sysbench_command_lines.py has the
    table beside sysbench."""
    # forked from the zygote (tests/forkserver.py: a process of its own; a
    # refusal before any run); the --histogram refusal below starts python -m
    done = run_probetop(["cpu", *args, "--headless"], timeout=60)
    assert done.returncode == 1 and message in done.stderr, done.stderr


# -- --histogram: sysbench's latency histogram --------------------------------

HIST_TITLE = "Latency histogram (values are in milliseconds)"
HIST_HEADER = "       value  ------------- distribution ------------- count"
HIST_ROW = re.compile(r"^( {0,11}\d+\.\d{3}) \|([* ]{40}) (\d+)$")


def histogram(text: str) -> tuple[list[tuple[str, int, int]], list[str]]:
    """A sysbench user's reader of the --histogram block: its rows (value as
    printed, stars, count), and the report's lines with the rows taken out."""
    lines = text.splitlines()
    rows = [
        (m.group(1), len(m.group(2).rstrip()), int(m.group(3)))
        for m in map(HIST_ROW.match, lines)
        if m
    ]
    rest = [ln for ln in lines if not HIST_ROW.match(ln)]
    return rows, rest


def sysbench_bucket_values() -> set[str]:
    """Every bucket value as sysbench prints it (%12.3f of exp(i / mult +
    ln(0.001)), 1024 buckets from 0.001 to 100000 ms: sb_histogram.c)."""
    import math

    mult = 1023 / (math.log(100000) - math.log(0.001))
    return {f"{math.exp(i / mult + math.log(0.001)):12.3f}" for i in range(1024)}


HIST_ARGS = ["--threads=1", "--time=2", "--report-interval=1", "--cpu-max-prime=3000"]


@pytest.fixture(scope="module")
def sysbench_histogram() -> str:
    """sysbench's report with ``--histogram=on`` (one run for the three
    spellings of the flag probetop is given: sysbench's side is the same)."""
    return run([require_tool("sysbench"), "cpu", *HIST_ARGS, "--histogram=on", "run"])


@pytest.mark.parametrize("flag", ["--histogram=on", "--histogram", "--histogram=1"])
def test_histogram_is_printed_as_sysbench_prints_it(flag: str, sysbench_histogram: str) -> None:
    """``--histogram`` as sysbench takes it: the title, header, one row per
    non-empty bucket (sysbench's bucket values, a bar scaled to the largest
    count, the count) and a one-space line, between the last interval line
    and "CPU speed:"; the counts add up to the events; the rest of the
    report is sysbench's line for line."""
    theirs = sysbench_histogram
    # the other spellings run 1 s: the last interval line before the
    # histogram is then [ 1s ] (probetop always prints the one at --time)
    args = HIST_ARGS if flag == "--histogram=on" else [*HIST_ARGS, "--time=1"]
    ours = run([*PROBETOP, "cpu", *args, flag, "run"])
    values = sysbench_bucket_values()
    for text in (theirs, ours):
        rows, rest = histogram(text)
        assert rows, text
        top = max(count for _, _, count in rows)
        for value, stars, count in rows:
            assert value in values, value  # sysbench's own rows check the rule
            assert stars == int(count * 40.0 / top + 0.5), (value, stars, count)
        assert sum(count for _, _, count in rows) == parse(text)["events"][0]
        at = rest.index(HIST_TITLE)
        assert INTERVAL.match(rest[at - 1]), rest[at - 1]  # right after the last [ Ns ] line
        assert rest[at + 1 : at + 4] == [HIST_HEADER, " ", "CPU speed:"], rest[at : at + 4]
    assert (
        skeleton("\n".join(histogram(ours)[1]))[1:] == skeleton("\n".join(histogram(theirs)[1]))[1:]
    )


@pytest.mark.parametrize("flag", ["--histogram=off", "--histogram=0", None])
def test_no_histogram_unless_asked(flag: str | None) -> None:
    sysbench = require_tool("sysbench")
    args = ["--events=200", "--time=0", "--cpu-max-prime=2000"] + ([flag] if flag else [])
    theirs = run([sysbench, "cpu", *args, "run"])
    ours = run([*PROBETOP, "cpu", *args, "run"])
    for text in (theirs, ours):
        assert HIST_TITLE not in text and not histogram(text)[0]
    assert skeleton(ours)[1:] == skeleton(theirs)[1:]


def test_histogram_value_sysbench_refuses_is_a_usage_error() -> None:
    sysbench = require_tool("sysbench")
    theirs = subprocess.run(
        [sysbench, "cpu", "--histogram=yes", "--time=1", "run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "invalid option: --histogram=yes" in theirs.stdout + theirs.stderr
    done = subprocess.run(
        [*PROBETOP, "cpu", "--histogram=yes", "--time=1", "run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "--histogram" in done.stderr and "'yes'" in done.stderr, (
        done.stderr
    )
    assert "Traceback" not in done.stderr
