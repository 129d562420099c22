"""``--detach``: turn a run plan into a background session.

Contract of ``detach(plan, run)``:
- Checks first, in the caller's process: the name (``--name`` or
  ``COMMAND-YYYYMMDD-HHMMSS``) is free, the recording target is writable.
  A refusal is a SessionError / RecordingError (exit 2), nothing started.
- Then a double fork: the first child calls ``setsid`` (no controlling
  terminal, its own session and process group, so a closing terminal sends
  it nothing) and forks the session process, which ignores SIGHUP, reads
  stdin from /dev/null and writes stdout/stderr to ``NAME.log`` (0600).
- The session process writes ``NAME.session.json``, serves the control
  socket, and runs ``run(plan')`` where ``plan'`` is the plan headless,
  recording to ``NAME.jsonl`` (or ``--record``): the same path as
  ``--headless`` (same probes, same report, same exit status). At the end it
  writes its exit status into the metadata, which ``ls`` reads as "finished".
- The caller returns once the recording holds its header (the probes are
  running): it prints the name, the PID and how to attach, and returns 0. If
  the session ended before that (a probe's ``prepare`` refused), the caller
  prints the session's log on stderr and returns its exit status.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probetop.probes.record import Recorder, RecordingError, is_zstd
from probetop.tui import commands
from probetop.tui.plan import RunPlan
from probetop.tui.session import ignore_hangup
from probetop.tui.sessions.control import ControlServer
from probetop.tui.sessions.registry import (
    SessionError,
    SessionInfo,
    check_name,
    claim,
    default_name,
    meta_path,
    process_start_ticks,
    read_info,
    read_session,
    session_paths,
    write_info,
)

READY_TIMEOUT_S = 60.0
"""How long the caller waits for the session's probes to start (a demo's
targets, numba's first compile on a cold cache)."""

DETACHABLE = (*commands.PROBE_COMMANDS, "demo")


def detach(plan: RunPlan[Any], run: Callable[[RunPlan[Any]], int]) -> int:
    """Start ``plan`` as a background session; see the module docstring."""
    if plan.command is not None and plan.command not in DETACHABLE:
        raise SessionError(
            f"--detach runs probes in the background; `{plan.command}` has none to run "
            f"(detachable: {', '.join(DETACHABLE)}, or no command for the passive panes)"
        )
    given = plan.common.name  # "" is refused by check_name, never the default
    name = check_name(default_name(plan.command) if given is None else given)
    old = read_session(name)  # a damaged metadata file keeps its name taken too
    if old is not None:
        what = "is running" if old.state == "running" else f"{old.state}; its files are kept"
        raise SessionError(f"a session named {name!r} {what}: pick another --name")
    recording, sock, log = session_paths(name, plan.common.record)
    # The name is taken here, atomically, before anything else is checked:
    # of two `--detach --name X` started together exactly one gets X, and
    # the other is told so (not that X's recording is in use). The session
    # process rewrites this file with its own PID before it says "ready".
    claim(_info(name, plan.common.argv, recording, sock, log))
    try:
        Recorder.check_path(recording)
    except RecordingError:
        meta_path(name).unlink(missing_ok=True)  # refused: the name is free again
        raise
    common = dataclasses.replace(
        plan.common, record=recording, headless=True, detach=False, name=name
    )
    session_plan = dataclasses.replace(plan, common=common)
    ready_r, ready_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    first = os.fork()
    if first == 0:  # first child: leave the terminal's session, fork the session
        os.close(ready_r)
        try:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            code = _session_process(name, session_plan, run, ready_w, sock, log)
        except BaseException as exc:  # never return into the caller's code in a child
            with contextlib.suppress(Exception):  # the terminal, or the log once redirected
                print(f"probetop: error: session {name}: {exc}", file=sys.stderr, flush=True)
            code = 1
        os._exit(code)
    os.close(ready_w)
    os.waitpid(first, 0)
    return _wait_ready(name, ready_r, log)


def _wait_ready(name: str, ready_r: int, log: os.PathLike[str] | str) -> int:
    """The caller's side: wait for "ready" (or the session's end)."""
    answer = b""
    deadline = time.monotonic() + READY_TIMEOUT_S
    with os.fdopen(ready_r, "rb", buffering=0) as pipe:
        while time.monotonic() < deadline:
            readable, _w, _x = select.select([pipe], [], [], 0.5)
            if readable:
                answer = pipe.read(64) or b""
                break
    found = read_info(meta_path(name))
    info = found if isinstance(found, SessionInfo) else None
    if answer.startswith(b"ready") and info is not None:
        print(f"probetop: session {name} started (PID {info.pid})")
        print(f"  recording  {info.recording}")
        print(f"  attach     probetop attach {name}")
        print(f"  stop       probetop stop {name}")
        return 0
    with contextlib.suppress(OSError):
        sys.stderr.write(Path(log).read_text())  # the session's own error message
    if info is not None and info.pid == os.getpid():
        # The session process never wrote its metadata: free the name claimed.
        with contextlib.suppress(OSError):
            os.unlink(meta_path(name))
        return 1
    if info is not None and info.exit_code is not None:
        return info.exit_code or 1
    if answer == b"":
        print(f"probetop: error: session {name} did not start in {READY_TIMEOUT_S:g} s; "
              f"see {log}", file=sys.stderr)  # fmt: skip
    return 1


def redirect_to_log(log: os.PathLike[str] | str) -> None:
    """stdin from /dev/null; stdout and stderr to the session's log (0600)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # O_NOFOLLOW: a link planted at NAME.log never makes the session write elsewhere.
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(log, flags, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _session_process(
    name: str,
    plan: RunPlan[Any],
    run: Callable[[RunPlan[Any]], int],
    ready_w: int,
    sock: Path,
    log: Path,
) -> int:
    """The background session itself (the grandchild); its exit status."""
    os.umask(0o077)
    redirect_to_log(log)
    ignore_hangup()
    assert plan.common.record is not None
    recording = plan.common.record
    info = _info(name, plan.common.argv, recording, sock, log)
    write_info(info)
    server = ControlServer(
        Path(sock),
        status=lambda: {"name": name, "pid": os.getpid(), "recording": str(recording)},
        on_stop=lambda: os.kill(os.getpid(), signal.SIGTERM),
    )
    code = 1
    ready = _Ready(ready_w)
    try:
        server.start()
        ready.when_recording(recording)
        code = run(plan)
    finally:
        server.close()
        write_info(info.finished(code))
        ready.close()  # the caller reads EOF: the session ended before it was ready
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def _info(name: str, argv: Any, recording: Path, sock: Path, log: Path) -> SessionInfo:
    """This process's metadata for session ``name`` (the command is redacted
    when written)."""
    return SessionInfo(
        name=name,
        command=list(argv),
        started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        pid=os.getpid(),
        start_ticks=process_start_ticks(os.getpid()),
        recording=str(recording),
        socket=str(sock),
        log=str(log),
    )


HEADER_LIMIT = 1 << 20  # bytes of a first line looked at; a header is a few KB


def is_header_line(line: bytes) -> bool:
    """``line`` is a whole recording header (a JSON object of type "header").

    Why parse it: any line used to do, so a file at ``--record`` that someone
    had changed within the last second (an old file being overwritten, a
    file the session's own probe refused to touch) said "ready" for a
    session that then failed: the caller printed "session started", exit 0."""
    if not line.endswith(b"\n"):
        return False
    try:
        first = json.loads(line)
    except ValueError:  # also not UTF-8
        return False
    return isinstance(first, dict) and first.get("type") == "header"


class _Ready:
    """The pipe that tells the caller the probes are running."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._lock = threading.Lock()

    def when_recording(self, recording: Path) -> None:
        """Say "ready" once ``recording`` holds a header written by this session."""
        since = time.time_ns() - 1_000_000_000  # an older file at --record is not ours

        def watch() -> None:
            while self._fd is not None:
                with contextlib.suppress(OSError):
                    if os.stat(recording).st_mtime_ns >= since:
                        with open(recording, "rb") as f:
                            # the header line, or (a .zst recording) its first block
                            head = f.readline(HEADER_LIMIT)
                            if is_header_line(head) or (is_zstd(head) and len(head) > 12):
                                self.send()
                                return
                time.sleep(0.05)

        threading.Thread(target=watch, name="ready", daemon=True).start()

    def send(self) -> None:
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.write(self._fd, b"ready\n")
                self.close_locked()

    def close(self) -> None:
        with self._lock:
            self.close_locked()

    def close_locked(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
