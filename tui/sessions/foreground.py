"""Detach a foreground dashboard into a background session (the ``d`` key).

The probes of a live dashboard run in its process, in threads, so a fork
when the key is pressed could not carry them. Instead the split is made
before anything starts:

- ``start_waiter()`` (called by ``tui.main`` when a plan may show a live
  dashboard, before its targets, probes or ``--metrics`` start any thread)
  forks once (tui/sessions/waiter.py). The PARENT, the process the shell
  waits for, becomes a waiter: it passes stop signals on (SIGTSTP too:
  tui/sessions/jobcontrol.py) and exits with the child's exit status (or
  at once with it when the kernel holds the child: a hung device). The
  CHILD returns and runs the dashboard as before, on the same terminal,
  with ``PR_SET_PDEATHSIG`` = SIGTERM so that it stops cleanly if the
  waiter is killed (the shell would otherwise share the terminal with it).
- When the key is pressed, ``detach_session()`` (in the dashboard's event
  loop) turns the run into a session like ``--detach`` makes: a free name
  (``--name`` or ``COMMAND-YYYYMMDD-HHMMSS``), a recording holding every
  record since the start (``LiveSession.keep_recording``: the in-memory
  history moved to ``NAME.jsonl.zst`` in the state directory, or the
  ``--record`` file), the control socket, ``NAME.session.json``. Nothing is
  stopped; a refusal is a SessionError / RecordingError the dashboard shows.
- The dashboard then exits (Textual restores the terminal) and
  ``run_detached()`` goes on in the same event loop with the same hub: the
  waiter is told what to print (name, PID, how to attach and stop) and
  exits 0, giving the shell its terminal back; the child leaves the
  terminal (``setsid``: it is not a process group leader, so it can), reads
  /dev/null, writes to ``NAME.log``, ignores SIGHUP, and runs as a detached
  session does until ``--time``, its probes' end, SIGINT/SIGTERM or
  ``probetop stop``: then the command's headless report goes to the log
  (statistics read back from the recording, so they cover the whole run)
  and its exit status to the metadata.

Not available: replay and attach views (``d`` there closes the view),
headless runs (nothing forked); the key says why when the process already
ran a thread at the split (nothing forked then either).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from probetop.probes.core import stopsignals
from probetop.probes.core.sample import Sample, now_ns
from probetop.probes.core.stats import RunningStats
from probetop.probes.record import RecordingError
from probetop.tui.run import hardexit
from probetop.tui.run.livesession import LiveSession, ignore_hangup
from probetop.tui.run.runner import RunResult
from probetop.tui.sessions import jobcontrol
from probetop.tui.sessions.control import ControlServer
from probetop.tui.sessions.daemon import redirect_to_log
from probetop.tui.sessions.registry import (
    Reserve,
    SessionError,
    SessionInfo,
    check_name,
    claim,
    default_name,
    meta_path,
    process_start_ticks,
    session_paths,
    state_dir,
    write_info,
)
from probetop.tui.sessions.waiter import set_parent_death_signal, split

START_WAIT_S = 30.0  # how long d waits for a dashboard that is still starting


@dataclass(frozen=True)
class ForegroundLink:
    """The dashboard's side of the waiter: its PID and the pipe to it."""

    waiter_pid: int
    pipe_w: int


@dataclass
class DetachedSession:
    """What ``detach_session`` set up; ``run_detached`` carries it on."""

    info: SessionInfo
    server: ControlServer
    link: ForegroundLink
    reserve: Reserve  # room for the exit status on a disk the run fills


def start_waiter() -> tuple[ForegroundLink | None, str | None]:
    """Fork the waiter (module docstring; tui/sessions/waiter.py). In the
    child: (link, None). When the split cannot be made: (None, why);
    nothing forked."""
    waiter = os.getpid()
    pipe_w, why = split(dashboard=True)
    if pipe_w is None:
        return None, why
    jobcontrol.set_waiter(waiter)
    return ForegroundLink(waiter, pipe_w), None


async def detach_session(
    session: LiveSession,
    link: ForegroundLink,
    *,
    command: list[str],
    command_name: str | None,
    name: str | None,
) -> DetachedSession:
    """Make the running ``session`` a named background session (module
    docstring). SessionError / RecordingError: nothing changed."""
    # d pressed right after the first frame: the history and the probes are
    # still starting (LiveSession.begin); what they keep is known after.
    if not await session.ready(START_WAIT_S):
        raise SessionError(f"still starting after {START_WAIT_S:g} s: press d again later")
    if session.finished:
        raise SessionError("the session has ended: nothing left to detach")
    missing = session.history_missing()
    if missing is not None:
        raise SessionError(f"cannot detach without losing samples: {missing}")
    name = check_name(name or default_name(command_name))
    _recording, sock, log = session_paths(name, None)
    target = state_dir() / f"{name}.jsonl.zst"
    info = SessionInfo(
        name=name,
        command=list(command),
        started_at=_started_at(session),
        pid=os.getpid(),
        start_ticks=process_start_ticks(os.getpid()),
        recording=str(target),
        socket=str(sock),
        log=str(log),
        extra={"detached_from": "foreground"},
    )
    # Atomically, as --detach does: SessionError if the name is taken (an
    # ended session of that name is kept under another, as --detach says).
    claim(info)
    try:
        recording = await session.keep_recording(target)
    except RecordingError:
        meta_path(name).unlink(missing_ok=True)  # nothing changed: the name is free again
        raise
    if Path(recording) != target:  # --record: that file already holds everything
        info = replace(info, recording=str(Path(recording).absolute()))
    server = ControlServer(
        sock,
        status=lambda: {"name": name, "pid": os.getpid(), "recording": info.recording},
        on_stop=lambda: os.kill(os.getpid(), signal.SIGTERM),
    )
    server.start()
    write_info(info)
    return DetachedSession(info, server, link, Reserve())


def _started_at(session: LiveSession) -> str:
    """Wall time of the session's start (the hub's monotonic start, mapped)."""
    age_s = (now_ns() - session.hub.started_ns) / 1e9 if session.hub.started_ns else 0.0
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=age_s)
    return start.isoformat(timespec="seconds")


def _leave_terminal(detached: DetachedSession) -> None:
    """Tell the waiter to go, then drop the terminal (module docstring)."""
    info = detached.info
    text = (
        f"probetop: detached into session {info.name} (PID {info.pid})\n"
        f"  recording  {info.recording}\n"
        f"  attach     probetop attach {info.name}\n"
        f"  stop       probetop stop {info.name}\n"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    set_parent_death_signal(0)  # the waiter is about to exit: that is no reason to stop
    hardexit.last_words(None)  # the pipe closes below: the session's end tells no waiter
    with contextlib.suppress(OSError):
        os.write(detached.link.pipe_w, text.encode())
    with contextlib.suppress(OSError):
        os.close(detached.link.pipe_w)
    with contextlib.suppress(OSError):
        os.setsid()
    os.umask(0o077)
    redirect_to_log(info.log)
    ignore_hangup()


async def run_detached(
    detached: DetachedSession,
    session: LiveSession,
    *,
    duration_s: float | None,
    report: Callable[[RunResult], int],
) -> int:
    """Carry a detached dashboard's session on to its end; its exit status
    (also written to its metadata). See the module docstring."""
    _leave_terminal(detached)
    stop = asyncio.Event()
    reason = "time" if session.probes_stopped else "completed"

    def on_signal(signame: str) -> None:
        nonlocal reason
        reason = f"interrupted ({signame})"
        stop.set()

    session.remove_signal_handlers()
    session.install_signal_handlers(on_signal)
    hub = session.hub
    foreground = [p.id for p in session.probes if not getattr(p, "background", False)]
    deadline_ns = None if duration_s is None else hub.started_ns + int(duration_s * 1e9)
    code = 1
    try:
        while not stop.is_set() and not session.probes_stopped:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=0.25)
            if deadline_ns is not None and now_ns() >= deadline_ns:
                reason = "time"
                break
            if foreground and not any(pid in session.running() for pid in foreground):
                break
        await session.shutdown(reason)
        code = report(session_result(session, reason, Path(detached.info.recording)))
    except KeyboardInterrupt:  # a stop signal while the report was written: it says which
        code = stopsignals.exit_status()
    finally:
        _end(detached, session, code)
    return code


@stopsignals.uninterrupted
def _end(detached: DetachedSession, session: LiveSession, code: int) -> None:
    """The session's last steps, its exit status written whatever stop
    signals come meanwhile (tui/sessions/daemon.py ``_end``)."""
    session.remove_signal_handlers()  # puts the console script's handler back: then ignored
    stopsignals.ignore_from_now()
    detached.server.close()
    detached.reserve.write(detached.info.finished(code))
    hardexit.flush_output()  # the log on a full disk: the status is written


def session_result(session: LiveSession, reason: str, recording: Path | None) -> RunResult:
    """What a finished live session produced, as a headless run's result, for
    the command's report: after a detached session ends, and after a stop
    signal closed the dashboard. Statistics are read back from ``recording``
    (the dashboard kept none), none without one."""
    hub = session.hub
    # The command's own probes first (its report reads probes[0]), the
    # passive panes the dashboard added after them.
    probes = sorted(session.probes, key=lambda p: bool(getattr(p, "background", False)))
    return RunResult(
        probes=probes,
        summaries=dict(hub.summaries),
        errors=dict(hub.errors),
        samples={},
        duration_s=(now_ns() - hub.started_ns) / 1e9,
        reason=reason,
        stats={} if recording is None else _stats_from(recording),
        recording_failures=list(session.recording_failures),
    )


def _stats_from(recording: Path) -> dict[str, dict[str, RunningStats]]:
    """min/mean/max of every metric over the whole run, read back from the
    recording (the dashboard kept no running statistics)."""
    from probetop.probes.record import stream_session  # the reader: after a detach only

    stats: dict[str, dict[str, RunningStats]] = {}
    try:
        with stream_session(recording) as stream:
            for _t, record in stream.records():
                if isinstance(record, Sample):
                    per = stats.setdefault(record.probe, {})
                    for key, value in record.values.items():
                        if value is not None:
                            per.setdefault(key, RunningStats()).add(float(value))
    except RecordingError as exc:
        print(f"probetop: warning: statistics incomplete: {exc}", file=sys.stderr)
    return stats
