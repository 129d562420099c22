"""``--assert`` comparisons at the boundary, where a user notices a wrong
operator: ``--events 100`` does exactly 100 events (sysbench's --events),
so ``total_events<=100``, ``>=100`` and ``==100`` hold (exit 0) and
``<100`` and ``>100`` fail (exit 99, measured 100). Mutation review of
issue 29 item 9 (docs/reliability.md): ``<=`` read as ``<`` passed every
test before this one."""

from __future__ import annotations

from analysis_helpers import probetop

RUN = ["cpu", "--events", "100", "--time", "0", "--cpu-max-prime", "2000", "--headless"]


def test_inclusive_bounds_hold_at_the_exact_value() -> None:
    out = probetop(
        *RUN,
        "--assert",
        "cpu.total_events<=100",
        "--assert",
        "cpu.total_events>=100",
        "--assert",
        "cpu.total_events==100",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "assertions: 3 passed, 0 failed" in out.stdout
    assert "ok   cpu.total_events<=100 (cpu): measured 100, wanted <= 100" in out.stdout


def test_strict_bounds_fail_at_the_exact_value() -> None:
    out = probetop(*RUN, "--assert", "cpu.total_events<100", "--assert", "cpu.total_events>100")
    assert out.returncode == 99, out.stdout + out.stderr
    assert "assertions: 0 passed, 2 failed" in out.stdout
