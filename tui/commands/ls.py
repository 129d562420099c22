"""`probetop ls`: the detached sessions, running, finished and died."""

from __future__ import annotations

import datetime as dt
import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core import kernelholds
from probetop.probes.core.options import CommandSpec
from probetop.probes.record import redact_argv
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.sessions.registry import (
    SessionInfo,
    process_start_ticks,
    scan_sessions,
    state_dir,
)

SPEC = CommandSpec(
    name="ls",
    help="list the detached sessions (starting, running, finished, died, held)",
    description="""\
List the sessions started with --detach: name, command, start time, state
(starting: its probes are not started yet; running; finished: it ended and
wrote its report; died: its process is gone without one, e.g. SIGKILL;
held: its process is kept by the kernel, threads blocked on a device that
does not answer, named with what they wait on), PID and recording size.
With --json, one JSON document. Sessions live in $XDG_STATE_HOME/probetop
(docs/sessions.md).
""",
    options=(),
)


@dataclass(frozen=True, slots=True)
class LsSettings:
    """`ls` takes no options of its own."""


def settings(values: Mapping[str, Any], common: CommonOptions) -> LsSettings:
    return LsSettings()


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _started(info: SessionInfo) -> str:
    try:
        when = dt.datetime.fromisoformat(info.started_at).astimezone()
    except ValueError:
        return info.started_at
    return f"{when:%Y-%m-%d %H:%M:%S}"


def _command(info: SessionInfo) -> str:
    argv, skip = [], False
    for arg in redact_argv(info.command)[1:]:
        if skip or arg == "--detach" or arg.startswith("--name="):
            skip = False
            continue
        skip = arg == "--name"
        if not skip:
            argv.append(arg)
    return shlex.join(argv) or "(passive panes)"


def held(info: SessionInfo) -> str | None:
    """What holds a session's process in the kernel, if anything: its
    threads in an uninterruptible wait at two looks ``HELD_LOOK_S`` apart
    (a session still starting or running, or one whose main thread ended,
    with or without writing its exit status, while the kernel keeps others:
    exit_aio waits for AIO in flight). Only the session's own process (its
    start time matches: never a reused PID)."""
    ticks = process_start_ticks(info.pid, ended_too=True)
    if ticks is None or ticks != info.start_ticks:
        return None
    return kernelholds.held_now(info.pid, HELD_LOOK_S)


HELD_LOOK_S = 0.3
"""How long a thread must stay in D for ``ls`` to call its session held
(ordinary I/O passes through D in milliseconds)."""


def rows(sessions: list[SessionInfo]) -> list[dict[str, Any]]:
    """One mapping per session, as ``--json`` prints them: ``state`` is
    "held" (``held`` says by what) when the kernel keeps its process."""
    out = []
    for s in sessions:
        why = held(s)
        out.append(
            {
                "name": s.name,
                "command": redact_argv(s.command),  # files written before it was redacted
                "started_at": s.started_at,
                "state": "held" if why else s.state,
                "pid": s.pid,
                "recording": s.recording,
                "recording_bytes": s.recording_size,
                "exit_code": s.exit_code,
                "ended_at": s.ended_at,
                **({"held": why} if why else {}),
            }
        )
    return out


def run(plan: RunPlan[LsSettings]) -> int:
    sessions, damaged = scan_sessions()
    for d in damaged:  # listed, never a traceback, never silently skipped
        print(f"probetop: warning: {d.path}: damaged session metadata ({d.why})", file=sys.stderr)
    if plan.common.json:
        json.dump({"sessions": rows(sessions)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not sessions:
        print(f"no sessions in {state_dir()} (start one with --detach)")
        return 0
    table = [("NAME", "STATE", "PID", "STARTED", "SIZE", "COMMAND")]
    holds = []
    for s in sessions:
        why = held(s)
        state = "held" if why else s.state
        state = state if s.exit_code in (None, 0) else f"{state} ({s.exit_code})"
        table.append((s.name, state, str(s.pid), _started(s), _size(s.recording_size), _command(s)))
        if why:
            holds.append(
                f"{s.name}: held by the kernel ({why}): PID {s.pid} ends when its I/O "
                "completes or fails (the device answers or is removed)"
            )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    for line in holds:
        print(line)
    return 0
