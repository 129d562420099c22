"""probetop's command line: parse, validate, dispatch.

Textual is imported only when a screen is shown; ``probetop --version`` and
headless runs never load it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from probetop.probes import __version__
from probetop.tui import commands
from probetop.tui.argtypes import number

MAIN_DESCRIPTION = """\
A terminal dashboard of live probes that measure like fio, sysbench, ping -f
and curl do. With no command it shows this machine's CPU, disks and network.
"""

MAIN_EPILOG = """\
examples:
  probetop                          passive CPU / disk / network panes
  probetop demo                     every probe against embedded local targets
  probetop cpu --threads 2 --headless      sysbench-style CPU report
  probetop --record s.jsonl --time 60 --headless   record a minute, no UI
  probetop replay s.jsonl           play a recording in the same panes
  probetop report s.jsonl           text summary and charts of a recording

Run `probetop COMMAND --help` for a command's options.
"""


def add_common(
    parser: argparse.ArgumentParser, *, suppress: bool, skip: tuple[str, ...] = ()
) -> None:
    """Options every command takes. Sub-parsers use SUPPRESS so values given
    before the command name are not reset by the sub-parser's defaults.
    ``skip`` leaves out options a command defines itself (icmp's --interval)."""

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("common options")
    group.add_argument(
        "--record",
        metavar="FILE",
        default=d(None),
        help="record the session to FILE (JSON Lines, mode 0600)",
    )
    group.add_argument(
        "--headless",
        action="store_true",
        default=d(False),
        help="run without the dashboard and print a report at the end",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=d(False),
        help="headless, and print the report as one JSON document",
    )
    group.add_argument(
        "--time",
        type=number(nonnegative=True),
        metavar="S",
        default=d(None),
        help="stop the probes after S seconds",
    )
    if "--interval" not in skip:
        group.add_argument(
            "--interval",
            type=number(positive=True),
            metavar="S",
            default=d(1.0),
            help="sampling interval in seconds (default 1)",
        )
    group.add_argument(
        "--theme",
        metavar="NAME",
        default=d(None),
        help="dashboard theme (probetop-dark, probetop-light, "
        "probetop-contrast, or any Textual theme)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probetop",
        description=MAIN_DESCRIPTION,
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"probetop {__version__}")
    add_common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in commands.available():
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            epilog=getattr(module, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        add_common(p, suppress=True, skip=getattr(module, "OWN_OPTIONS", ()))
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``probetop`` console script."""
    from probetop.probes.core.base import ProbeError
    from probetop.tui.launch import fail, launch

    parser = build_parser()
    args = parser.parse_args(argv)
    # NO_COLOR: Textual honours it itself (monochrome filter); an empty
    # TEXTUAL_COLOR_SYSTEM would crash rich (KeyError '').
    module = getattr(args, "_module", None)
    try:
        if module is None:
            from probetop.probes.system.collectors import passive_probes

            return launch(args, passive_probes(args.interval), None, with_passive=False)
        run = getattr(module, "run", None)
        if run is not None:
            code = run(args)
            if code is not None:
                return int(code)
        probes = module.build_probes(args)
        return launch(args, probes, module)
    except ProbeError as exc:
        return fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `probetop report x | head`: the reader left; stay quiet like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
