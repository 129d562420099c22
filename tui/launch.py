"""Run a set of probes: headless (report on stdout) or in the dashboard.

Shared by every command so each behaves the same way: ``--record`` is
checked before anything starts, probe ``prepare`` errors exit 2 with their
message, and the dashboard (Textual) is imported only when it is shown.
"""

from __future__ import annotations

import asyncio
import sys
from argparse import Namespace
from pathlib import Path
from types import ModuleType

from probetop.probes.core.base import Probe, ProbeError
from probetop.probes.record.writer import Recorder, RecordingError
from probetop.probes.system.collectors import passive_probes
from probetop.tui.config import AppConfig
from probetop.tui.runner import generic_report, run_headless


def fail(message: str, code: int = 2) -> int:
    """Print ``probetop: error: message`` on stderr and return ``code``."""
    print(f"probetop: error: {message}", file=sys.stderr)
    return code


def wants_headless(args: Namespace) -> bool:
    """Headless when asked, when --json is asked, or when stdout is no terminal."""
    return bool(getattr(args, "headless", False) or getattr(args, "json", False)) or not (
        sys.stdout.isatty() and sys.stdin.isatty()
    )


def check_record(args: Namespace) -> Path | None:
    record = getattr(args, "record", None)
    if record is None:
        return None
    Recorder.check_path(record)
    return Path(record)


def launch(
    args: Namespace,
    probes: list[Probe],
    module: ModuleType | None = None,
    *,
    focus: str | None = None,
    with_passive: bool = True,
) -> int:
    """Run ``probes`` headless or in the dashboard; return the exit code."""
    try:
        record = check_record(args)
        for probe in probes:
            probe.prepare()
    except (ProbeError, RecordingError) as exc:
        return fail(str(exc), getattr(exc, "exit_code", 2))
    command = list(sys.argv)
    duration = getattr(args, "time", None)
    if wants_headless(args):
        result = asyncio.run(
            run_headless(probes, duration_s=duration, record=record, command=command)
        )
        report = getattr(module, "report", None)
        if report is not None:
            return int(report(args, result))
        return generic_report(result, as_json=bool(getattr(args, "json", False)))
    interval = getattr(args, "interval", 1.0) or 1.0
    if with_passive:
        have = {p.id for p in probes}
        probes = [p for p in passive_probes(interval) if p.id not in have] + probes
    config = AppConfig(
        probes=probes,
        record=record,
        theme=getattr(args, "theme", None),
        interval_s=interval,
        focus=focus or getattr(module, "FOCUS", None),
        duration_s=duration,
        command=command,
    )
    return run_app(config)


def run_app(config: AppConfig) -> int:
    """Show the dashboard until the user quits; return its exit code."""
    from probetop.themes import UnknownThemeError
    from probetop.tui.app import make_app  # Textual loads only here

    try:
        app = make_app(config)  # validates --theme before the UI opens
    except UnknownThemeError as exc:
        return fail(str(exc), exc.exit_code)
    app.run()
    return int(app.return_code or 0)
