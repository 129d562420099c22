"""One name, one meaning (issue 27, want 6): the sampling period is
``--sample-interval`` in every command, before or after its name; a family's
own options keep their reference tool's names (icmp's ``-i/--interval`` is
ping's send interval, cpu's ``--report-interval`` is sysbench's reporting
period, which is cpu's sampling period); the old common ``--interval`` is
read with a one-line hint, and refused where it would be ambiguous."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from probetop.probes import registry
from probetop.probes.core.base import UsageProbeError
from probetop.tui import commands
from probetop.tui.cli.parser import build_parser, make_plan, parse_args

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
# The operands each probe command needs to parse (nothing runs): its family's example.
OPERANDS = {family.name: list(family.example) for family in registry.families()}


def plan_of(argv: list[str]) -> Any:
    parser = build_parser()
    return make_plan(parse_args(parser, argv), ["probetop", *argv])


def test_every_probe_command_is_covered() -> None:
    assert set(OPERANDS) == set(commands.PROBE_COMMANDS)


@pytest.mark.parametrize("command", commands.PROBE_COMMANDS)
def test_sample_interval_is_the_sampling_period_everywhere(command: str) -> None:
    after = plan_of([command, *OPERANDS[command], "--sample-interval", "0.5"])
    before = plan_of(["--sample-interval", "0.5", command, *OPERANDS[command]])
    assert after.common.interval_s == before.common.interval_s == 0.5
    assert after.hints == before.hints == ()
    settings = after.settings
    if hasattr(settings, "interval_s"):  # the probe samples at that period
        assert settings.interval_s == 0.5


@pytest.mark.parametrize("command", commands.PROBE_COMMANDS)
def test_help_offers_one_name_for_the_sampling_period(command: str) -> None:
    parser = build_parser({command})
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
    text = sub.format_help()
    assert len(re.findall(r"^\s+--sample-interval S", text, re.M)) == 1, text
    if command != "icmp":  # icmp's -i/--interval is ping's send interval
        assert "--interval" not in text.replace("--sample-interval", "").replace(
            "--report-interval", ""
        )


@pytest.mark.parametrize("position", ["before", "after"])
def test_the_old_spelling_is_read_with_a_hint(position: str) -> None:
    argv = ["--interval", "0.5", "cpu"] if position == "before" else ["cpu", "--interval", "0.5"]
    plan = plan_of(argv)
    assert plan.common.interval_s == plan.settings.interval_s == 0.5
    assert len(plan.hints) == 1 and "--sample-interval" in plan.hints[0]
    done = subprocess.run(
        [*PROBETOP, *argv, "--time", "0.3", "--max-prime", "300"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    hint = [ln for ln in done.stderr.splitlines() if "hint" in ln]
    assert len(hint) == 1 and "--interval is now --sample-interval" in hint[0]


def test_icmp_keeps_pings_interval_and_refuses_the_ambiguous_old_spelling() -> None:
    plan = plan_of(["icmp", "127.0.0.1", "-i", "0.2", "--sample-interval", "2"])
    assert plan.settings.period_s == pytest.approx(0.2) and plan.common.interval_s == 2.0
    with pytest.raises(UsageProbeError, match="ambiguous"):
        plan_of(["--interval", "0.5", "icmp", "127.0.0.1"])


def test_cpu_report_interval_is_its_sampling_period() -> None:
    plan = plan_of(["cpu", "--report-interval", "0.5"])
    assert plan.settings.interval_s == 0.5 and plan.settings.report_intervals
    same = plan_of(["--sample-interval", "0.5", "cpu", "--report-interval", "0.5"])
    assert same.settings.interval_s == 0.5
    with pytest.raises(UsageProbeError, match="give one"):
        plan_of(["--sample-interval", "2", "cpu", "--report-interval", "0.5"])
    with pytest.raises(UsageProbeError, match="give --sample-interval only"):
        plan_of(["--interval", "2", "cpu", "--sample-interval", "0.5"])
