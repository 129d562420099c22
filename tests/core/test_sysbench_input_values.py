"""sysbench 1.0.20's reading of its option values, beside the installed
sysbench (review of 2026-11-29): one rule per class of option, in
probes/core/sysbench/options.py, so every sysbench option of cpu and mem
follows it.

- INT options (--threads, --events, --time, --report-interval,
  --percentile, --rand-seed, --verbosity, --cpu-max-prime and the old
  --num-threads, --max-requests, --max-time): a fraction or a value beyond
  an int exits 1 with sysbench's ``Invalid value for the 'NAME' option``
  (probetop ran ``--percentile=1.5`` and ``--rand-seed=99999999999``, and
  exited 2 for ``--threads=99999999999``); an empty value is 0, read as
  sysbench reads 0 (probetop exited 1).
- --forced-shutdown and --thread-stack-size: checked as sysbench checks
  them (its FATAL, exit 1), then ignored (probetop dropped them unchecked).
- A word after the command word: sysbench's ``Unrecognized command line
  argument`` (probetop exited 2 with argparse's ``invalid choice``).

Each case runs sysbench and probetop with the same argv and compares the
exit status and what a script reads; a refusal must carry sysbench's own
line (probetop prints it on stderr, its channel for errors).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_sysbench_command_lines import QUICK, both, has_report

CPU = ["cpu", "--time=1", "--cpu-max-prime=500"]
MEM = ["memory", "--time=1", "--memory-total-size=1M"]


def refusal(text: str) -> str:
    """sysbench's line that refuses a value or a word."""
    lines = [
        ln
        for ln in text.splitlines()
        if re.match(r"(FATAL: )?(Invalid value|Unrecognized command|Unknown command)", ln)
    ]
    assert len(lines) == 1, text
    return lines[0]


REFUSED = [
    # fractions and numbers beyond an int, in every INT option
    (CPU, "--percentile=1.5"),
    (CPU, "--percentile=99.9"),
    (CPU, "--percentile=1e1"),
    (MEM, "--percentile=1.5"),
    (CPU, "--rand-seed=99999999999"),
    (CPU, "--events=99999999999"),
    (MEM, "--events=99999999999"),
    (CPU, "--max-requests=99999999999"),
    (CPU, "--threads=99999999999"),
    (MEM, "--threads=2147483648"),
    (CPU, "--time=99999999999"),
    (MEM, "--time=2147483648"),
    (CPU, "--report-interval=99999999999"),
    (CPU, "--verbosity=99999999999"),
    (CPU, "--cpu-max-prime=99999999999"),
    (CPU, "--num-threads=abc"),
    (MEM, "--max-time=99999999999"),
    # checked as sysbench checks them, then ignored
    (CPU, "--forced-shutdown=abc"),
    (CPU, "--forced-shutdown=on"),
    (CPU, "--forced-shutdown=1.5"),
    (CPU, "--forced-shutdown=10abc"),
    (MEM, "--forced-shutdown=5 "),
    (CPU, "--thread-stack-size=0"),
    (CPU, "--thread-stack-size=abc"),
    (CPU, "--thread-stack-size=1.5K"),
    (CPU, "--thread-stack-size="),
    (CPU, "--thread-stack-size=2G"),
    (MEM, "--thread-stack-size=8b"),
]


@pytest.mark.parametrize(("base", "option"), REFUSED, ids=[f"{b[0]} {o}" for b, o in REFUSED])
def test_values_sysbench_refuses_exit_1_in_its_words(
    base: list[str], option: str, tmp_path: Path
) -> None:
    ref, ours = both([*base, QUICK, option, "run"], tmp_path)
    assert ref.returncode == 1, ref.stdout + ref.stderr
    assert ours.returncode == 1, ours.stdout + ours.stderr
    assert refusal(ref.stdout + ref.stderr) in ours.stderr
    assert "Threads started!" not in ours.stdout


# Values sysbench runs with: an empty INT is 0 (each option's own 0: no
# limit, off, disabled, the clock's seed); --forced-shutdown's other
# spellings, and none checked without a --time; sizes sysbench reads as a
# positive int.
RUNS = [
    (["cpu", "--time=", "--cpu-max-prime=500", QUICK], "endless time: the events end it"),
    (["memory", "--time=", "--memory-total-size=1M"], "no time limit: the size ends it"),
    ([*CPU, QUICK, "--percentile="], "0: disabled"),
    ([*MEM, "--percentile="], "0: disabled"),
    ([*CPU, QUICK, "--verbosity="], "0: no report"),
    ([*CPU, QUICK, "--rand-seed="], "0: the clock"),
    ([*MEM, "--events="], "memory ignores it"),
    ([*CPU, QUICK, "--report-interval="], "0: off"),
    ([*CPU, QUICK, "--num-threads="], "0: ignored, no warning"),
    ([*CPU, QUICK, "--num-threads=0"], "not above 1: ignored"),
    ([*CPU, "--events=5", "--max-requests="], "ignored: --events stays"),
    ([*MEM, "--max-time=", "--threads=2"], "ignored: --time stays"),
    ([*CPU, QUICK, "--forced-shutdown=10%x"], "N% of --time"),
    ([*CPU, QUICK, "--forced-shutdown=OFF"], "off, any case"),
    ([*CPU, QUICK, "--forced-shutdown=-5"], "strtol's number"),
    (["cpu", "--time=0", "--cpu-max-prime=500", QUICK, "--forced-shutdown=abc"], "no --time"),
    # (a 16K stack crashes sysbench itself, SIGSEGV: bigger ones here)
    ([*CPU, QUICK, "--thread-stack-size=128KB"], "read to the unit"),
    ([*CPU, QUICK, "--thread-stack-size=1M1"], "read to the unit"),
    ([*CPU, QUICK, "--thread-stack-size=5G"], "an int above 0"),
]


def read(text: str) -> dict[str, object]:
    """What a script reads from a report: the head's WARNING, threads and
    seed lines, the [ Ns ] lines, the percentile label, the event count of
    a run an event or size limit ended."""
    lines = text.splitlines()
    events = [ln.split()[-1] for ln in lines if "total number of events" in ln]
    return {
        "warnings": [ln for ln in lines if ln.startswith("WARNING")],
        "threads": [ln for ln in lines if ln.startswith("Number of threads")],
        "seed": [ln for ln in lines if ln.startswith("Initializing random")],
        "intervals": sum(1 for ln in lines if ln.startswith("[ ")),
        "percentile": [ln.split(":")[0].strip() for ln in lines if "th percentile:" in ln],
        "report": bool(events),
    }


@pytest.mark.parametrize(("argv", "why"), RUNS, ids=[" ".join(a[1:]) for a, _w in RUNS])
def test_values_sysbench_runs_with_run_as_there(argv: list[str], why: str, tmp_path: Path) -> None:
    ref, ours = both([*argv, "run"], tmp_path)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    assert ours.returncode == 0, (why, ours.stdout + ours.stderr)
    assert read(ours.stdout) == read(ref.stdout), (why, ours.stdout, ref.stdout)
    bound = QUICK in argv or "--events=5" in argv or argv[0] == "memory"
    if bound and read(ref.stdout)["report"]:
        # the limit in force: the event budget, or memory's size share
        def count(out: str) -> list[str]:
            return [ln.split()[-1] for ln in out.splitlines() if "total number of events" in ln]

        assert count(ours.stdout) == count(ref.stdout)
    key = "cpu" if argv[0] == "cpu" else "mem"
    assert has_report(ours.stdout, key) == has_report(ref.stdout, key)


EXTRA_WORDS = [
    ["memory", "--memory-total-size=1M", "run", "foo"],
    ["cpu", QUICK, "run", "run"],
    ["cpu", QUICK, "foo", "run"],
    ["--test=cpu", QUICK, "run", "foo", "bar"],
    ["memory", "foo"],
]


@pytest.mark.parametrize("argv", EXTRA_WORDS, ids=" ".join)
def test_words_after_the_command_exit_1_in_sysbenchs_words(argv: list[str], tmp_path: Path) -> None:
    """sysbench takes the first word after the test as its command (an
    unknown one: ``Unknown command: foo``) and refuses a second one
    (``Unrecognized command line argument: foo``), exit 1."""
    ref, ours = both(argv, tmp_path)
    assert ref.returncode == 1, ref.stdout + ref.stderr
    assert ours.returncode == 1, ours.stdout + ours.stderr
    assert refusal(ref.stdout + ref.stderr) in ours.stderr
