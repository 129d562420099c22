"""`probetop replay FILE`: play a recording in the same panes as a live run."""

from __future__ import annotations

import argparse
import sys

from probetop.probes.core.base import Probe, ProbeError
from probetop.probes.record.reader import load_session
from probetop.probes.record.writer import RecordingError

NAME = "replay"
HELP = "play a recording in the dashboard (pause, speed, seek)"
DESCRIPTION = """\
Play a recording made with --record in the same panes as a live session.
Keys: space pause/resume, 1/2/3 speed 1x/10x/max, left/right seek 10 s,
home/end jump to start/end. With --headless (or no terminal) it prints the
same summary as `probetop report --no-charts`.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a recording (JSON Lines) made with --record")
    parser.add_argument(
        "--speed", choices=("1", "10", "max"), default="1", help="initial playback speed"
    )


def run(args: argparse.Namespace) -> int:
    from probetop.tui.launch import fail, run_app, wants_headless

    try:
        session = load_session(args.file)
    except RecordingError as exc:
        return fail(str(exc), exc.exit_code)
    if wants_headless(args):
        from probetop.tui.commands.report import print_report

        for warning in session.warnings:
            print(f"probetop: warning: {warning}", file=sys.stderr)
        return print_report(session, charts=False, as_json=bool(args.json))
    from probetop.tui.config import AppConfig

    config = AppConfig(
        session=session,
        theme=args.theme,
        command=list(sys.argv),
        title=f"probetop replay {args.file}",
        extra={"speed": args.speed},
    )
    return run_app(config)


def build_probes(
    args: argparse.Namespace,
) -> list[Probe]:  # pragma: no cover - run() handles replay
    raise ProbeError("replay plays a file; it builds no probes")
