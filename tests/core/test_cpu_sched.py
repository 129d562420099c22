"""benchmarks/cpu_sched.py's choice of CPU: mem_vs_sysbench.py and
mem_undisturbed_vs_sysbench.py pin both tools' 1-thread runs to the CPU
that takes the fewest device interrupts, read from the real
/proc/interrupts (no mock: the machine's own counters)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import cpu_sched  # noqa: E402

pytestmark = pytest.mark.skipif(
    not Path("/proc/interrupts").exists(), reason="needs Linux's /proc/interrupts"
)


def _cpus_in_proc_interrupts() -> int:
    return len(Path("/proc/interrupts").read_text().splitlines()[0].split())


def test_rates_are_per_cpu_and_the_choice_is_the_least_interrupted_allowed_cpu() -> None:
    cpu, rates = cpu_sched.quietest_cpu(0.2)
    assert len(rates) == _cpus_in_proc_interrupts()
    assert all(r >= 0 for r in rates)
    allowed = os.sched_getaffinity(0)
    assert cpu in allowed
    assert rates[cpu] == min(rates[c] for c in allowed)


def test_device_interrupts_count_the_numbered_lines_only() -> None:
    # The timer and IPIs (LOC, RES, CAL ...) tick on every CPU; counting them
    # would pick by timer noise. A window long enough for some device
    # interrupt on a busy machine, short enough for a test.
    text = Path("/proc/interrupts").read_text().splitlines()
    numbered = [ln for ln in text[1:] if ln.split(":", 1)[0].strip().isdigit()]
    assert numbered, "no device interrupt lines"
    before = sum(
        int(f) for ln in numbered for f in ln.split(":", 1)[1].split()[: len(text[0].split())]
        if f.isdigit()
    )  # fmt: skip
    rates = cpu_sched.device_interrupts_per_cpu(0.5)
    after_text = Path("/proc/interrupts").read_text().splitlines()
    after = sum(
        int(f)
        for ln in after_text[1:]
        if ln.split(":", 1)[0].strip().isdigit()
        for f in ln.split(":", 1)[1].split()[: len(after_text[0].split())]
        if f.isdigit()
    )
    # the function's count lies within what the file showed around it
    assert 0 <= sum(rates) * 0.5 <= after - before


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_only_cpus_the_process_may_run_on_are_chosen() -> None:
    # Allowed only the CPU with the most device interrupts, it must still be chosen.
    _, rates = cpu_sched.quietest_cpu(0.2)
    busiest = max(sorted(os.sched_getaffinity(0)), key=lambda c: rates[c])
    code = (
        f"import os, sys; sys.path.insert(0, {str(BENCH)!r}); import cpu_sched;"
        f"os.sched_setaffinity(0, {{{busiest}}}); print(cpu_sched.quietest_cpu(0.1)[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert int(out.stdout) == busiest
