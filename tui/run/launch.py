"""Run a plan's probes: checks first, then headless (report on stdout) or a
dashboard configuration for ``tui.main`` to show.

Shared by every command so each behaves the same way: ``--record`` is
checked before anything starts, probe ``prepare`` errors exit 2 with their
message, and nothing here imports the UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probetop.probes.core import stopsignals
from probetop.probes.core.base import Probe
from probetop.probes.core.targetlock import TargetLock, UsesFiles, clash
from probetop.probes.record import RECORDING_INCOMPLETE_EXIT, RecordingError
from probetop.probes.system import passive_probes
from probetop.tui.analysis.assertions import exit_status, print_outcomes, run_assertions
from probetop.tui.cli.parser import deadline_s
from probetop.tui.cli.plan import RunPlan
from probetop.tui.commands import Command
from probetop.tui.metrics.address import TEXTFILE_NAME
from probetop.tui.run.liveecho import LiveEcho
from probetop.tui.run.livesession import terminal_hung_up
from probetop.tui.run.runner import generic_report, run_headless
from probetop.tui.run.viewconfig import Display, LiveView

if TYPE_CHECKING:  # the exporter (prometheus_client) loads only for --metrics/--textfile
    from probetop.tui.metrics.live import MetricsExporter


def fail(message: str, code: int = 2) -> int:
    """Print ``probetop: error: message`` on stderr and return ``code``.
    Messages quote what the user typed (``Unknown command: WORD``, a
    refused URL): credentials in it are redacted here, where every error
    of a run is said, not at each place that words one."""
    print(f"probetop: error: {error_text(message)}", file=sys.stderr)
    return code


def error_text(message: str) -> str:
    """``message`` with the credentials it quotes redacted (``redact_text``)."""
    from probetop.probes.record import redact_text

    return redact_text(message)


OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""Write errors that mean an output's storage failed, not a bug."""


def output_failed(exc: OSError) -> int | None:
    """The exit status for ``exc`` if it is a write the storage refused (the
    report to a stdout on a full disk, a session's log there): said on stderr
    when that can still be written, RECORDING_INCOMPLETE_EXIT (74, EX_IOERR:
    what the run measured could not all be written), never a traceback.
    None for any other error. A terminal that hung up (EIO) is the
    hangup's status, 129, not 74."""
    if exc.errno not in OUTPUT_ERRNOS:
        return None
    if exc.errno == errno.EIO and terminal_hung_up():
        # A closed window, an SSH drop: the hangup's SIGHUP interrupted the
        # run, its recording is whole, and no one is left to read the
        # report. That is its status (129), not a storage failure.
        return stopsignals.exit_status(128 + signal.SIGHUP)
    where = f" ({exc.filename})" if exc.filename else ""
    with contextlib.suppress(OSError):
        fail(f"cannot write the output{where}: {exc.strerror}")
    return RECORDING_INCOMPLETE_EXIT


def check_record(plan: RunPlan[Any]) -> Path | None:
    """The recording path, checked writable (RecordingError otherwise)."""
    record = plan.common.record
    if record is None:
        return None
    from probetop.probes.record import Recorder  # the writer: only for --record

    Recorder.check_path(record)
    return record


def prepare(plan: RunPlan[Any], probes: list[Probe]) -> Path | None:
    """Check the recording target and every probe before anything starts;
    raises RecordingError / ProbeError (exit 2 with their message)."""
    record = check_record(plan)
    for probe in probes:
        probe.prepare()
        # A signal raised inside a callback (numba's compile) is only recorded.
        stopsignals.check()
    check_outputs(plan, probes)
    return record


def check_outputs(plan: RunPlan[Any], probes: list[Probe]) -> None:
    """The files this run writes at the user's word (``--record``, and
    ``--textfile``'s probetop.prom) are none of the files its probes use (an
    IOPS or warm-up target, a checkpoint) nor each other; RecordingError
    (exit 2) otherwise.

    Why here: each is truncated or replaced as it is opened, which happens
    before any probe takes its target's lock, so the lock alone noticed the
    clash only after the target's data was gone."""
    outputs: list[tuple[str, TargetLock]] = []
    if plan.common.record is not None:
        path = os.path.realpath(plan.common.record)
        outputs.append((f"record to {plan.common.record}", TargetLock.for_target(path, "record")))
    if plan.common.textfile is not None:
        path = os.path.realpath(plan.common.textfile / TEXTFILE_NAME)
        outputs.append((f"write --textfile {path}", TargetLock.for_target(path, "textfile")))
    for i, (verb, lock) in enumerate(outputs):
        for other_verb, other in outputs[:i]:
            if clash(other, lock) is not None:
                raise RecordingError(
                    f"cannot {verb}: it is the file probetop would also {other_verb}; "
                    "choose another file"
                )
        for probe in probes:
            used = probe.target_locks() if isinstance(probe, UsesFiles) else ()
            for target in used:
                key = clash(lock, target)
                if key is not None:
                    raise RecordingError(
                        f"cannot {verb}: the {probe.kind} probe uses it ({key.label}), "
                        "and writing there would destroy it; choose another file"
                    )


def open_metrics(plan: RunPlan[Any]) -> MetricsExporter | None:
    """``--metrics`` / ``--textfile``: the endpoint bound and the directory
    written once, after the probes' checks and before any probe starts
    (MetricsError, exit 2: port in use, address not local, directory not
    writable). None when neither is asked."""
    common = plan.common
    if common.metrics is None and common.textfile is None:
        return None
    from probetop.tui.metrics.live import MetricsExporter

    exporter = MetricsExporter(common.metrics, common.textfile, interval_s=common.interval_s)
    exporter.open()
    return exporter


def run_headless_plan(plan: RunPlan[Any], probes: list[Probe], module: Command | None) -> int:
    """Run without a UI, then print the command's report (or the generic one)."""
    plan.common.note_theme_ignored()
    record = prepare(plan, probes)
    checks = run_assertions(plan.common.assertions, plan.command)  # --assert
    metrics = open_metrics(plan)
    if metrics is not None:
        metrics.linger_s = plan.common.metrics_linger_s  # served on after the report
    # A family's LiveText (sysbench's banner and [ Ns ] lines) is printed as
    # the run goes, after every check above: a bad option prints no banner.
    live = getattr(module, "live_text", None)
    parts = live(plan, probes) if live is not None else None
    echo = LiveEcho(*parts, [p.id for p in probes]) if parts is not None else None
    result = asyncio.run(
        run_headless(
            probes,
            duration_s=deadline_s(plan, module),
            record=record,
            command=list(plan.common.argv),
            # Reports read summaries and running stats, never the samples:
            # keeping every sample grew a headless run by ~55 MiB an hour
            # (benchmarks/soak_demo.py), without bound over days.
            keep_samples=False,
            footer_fields=checks,
            metrics=metrics,
            echo=echo,
        )
    )
    result.live_printed = echo is not None
    report = getattr(module, "report", None)
    if report is not None:
        code = int(report(plan, result))
    else:
        code = generic_report(result, as_json=plan.common.json)
    if checks is not None:
        # Checked against the same summaries the footer stores; after a
        # --json report they go to stderr, so stdout stays one JSON document.
        described = {p.id: {"kind": p.kind} for p in result.probes}
        outcomes = checks.outcomes(result.summaries, described)
        print_outcomes(outcomes, sys.stderr if plan.common.json else sys.stdout)
        code = exit_status(code, outcomes)
    if metrics is not None:
        with contextlib.suppress(OSError):
            sys.stdout.flush()  # the report is out before the wait
        metrics.linger()  # --metrics-linger: the final counters stay scrapeable
    return recording_status(result.recording_failures, code)


def recording_status(failures: list[str], code: int) -> int:
    """The exit status once the report is out: a recording a write error
    stopped is said again on stderr, and the run exits
    RECORDING_INCOMPLETE_EXIT (74) instead of ``code``."""
    if not failures:
        return code
    for failure in failures:
        fail(f"the recording is incomplete: {failure}")
    return RECORDING_INCOMPLETE_EXIT


def dashboard_config(
    plan: RunPlan[Any],
    probes: list[Probe],
    module: Command | None,
    *,
    with_passive: bool = True,
) -> LiveView:
    """What the dashboard shows for this plan (probes prepared, record checked)."""
    record = prepare(plan, probes)
    metrics = open_metrics(plan)
    interval = plan.common.interval_s
    if with_passive and getattr(module, "WITH_PASSIVE", True):
        have = {p.id for p in probes}
        probes = [p for p in passive_probes(interval) if p.id not in have] + probes
    return LiveView(
        probes=probes,
        display=Display(
            theme=plan.common.theme,
            interval_s=interval,
            focus=getattr(module, "FOCUS", None),
            command=tuple(plan.common.argv),
        ),
        record=record,
        duration_s=deadline_s(plan, module),
        footer_fields=run_assertions(plan.common.assertions, plan.command),
        metrics=metrics,
    )
