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
- Readiness is said by the session process itself, on a pipe it inherits:
  ``ready PID`` once its recorder has written the header to its recording
  (``probes.record.on_header``: the probes start next), or, if it ends
  before that (a probe's ``prepare`` refused, ``--record`` is a file the run
  uses, the recording's lock is held), ``failed CODE LEN`` and the LEN bytes
  it wrote to its log (its error). No file is polled: nothing but that
  process can answer for it.
- The caller waits for that message (``READY_TIMEOUT_S``). On "ready" it
  prints the name, the PID and how to attach, and returns 0. On "failed" it
  prints the session's output verbatim on stderr and returns its status: the
  session removed its metadata (and its log) first, so a session that never
  started is not listed. A session killed before it said anything has its
  metadata removed by the caller, which names its log and returns 1; one
  that says nothing in time is left running (``ls`` shows it) and the
  caller returns 1; so is one whose main thread the kernel holds
  (``HELD_START_S`` in an uninterruptible wait: a target that does not
  answer), at once, naming the thread's wait.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import os
import select
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probetop.probes.core import kernelholds, stopsignals
from probetop.probes.record import RECORDING_INCOMPLETE_EXIT, RecordingError
from probetop.tui import commands
from probetop.tui.cli.plan import RunPlan
from probetop.tui.run.hardexit import flush_output
from probetop.tui.run.livesession import ignore_hangup
from probetop.tui.sessions.control import ControlServer
from probetop.tui.sessions.registry import (
    Reserve,
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

HELD_START_S = 5.0
"""How long the session's main thread may be seen blocked in the kernel (an
uninterruptible wait: a read of a target that stopped answering) before the
caller stops waiting for "ready" and gives the shell back."""
HELD_POLL_S = 0.25

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
    if old is not None and old.live:
        raise SessionError(
            f"a session named {name!r} is {old.state} (its files are in"
            f" {meta_path(name).parent}): pick another --name, or `probetop stop {name}`"
        )
    recording, sock, log = session_paths(name, plan.common.record)
    # The name is taken here, atomically, before anything else is checked:
    # of two `--detach --name X` started together exactly one gets X, and
    # the other is told so (not that X's recording is in use). The session
    # process rewrites this file with its own PID before it says "ready".
    archived = claim(_info(name, plan.common.argv, recording, sock, log, starting=True))
    if archived is not None:
        print(
            f"probetop: the ended session {name} is kept as {archived}"
            f" (its files in {log.parent}; probetop ls)",
            file=sys.stderr,
        )
    from probetop.probes.record import Recorder  # the writer: a detach only

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
                print(f"probetop: error: session {name}: {str(exc) or type(exc).__name__}",
                      file=sys.stderr, flush=True)  # fmt: skip
            code = 1
        os._exit(code)
    os.close(ready_w)
    os.waitpid(first, 0)
    return _wait_ready(name, ready_r, recording, log)


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """What the session process said on the ready pipe.

    ``kind``: "ready" (its recording holds its header; ``pid``), "failed"
    (it ended before that: ``code``, and ``text``, what it wrote), "none"
    (the pipe closed without a message: it was killed, or never forked),
    "timeout" (no word in ``READY_TIMEOUT_S``)."""

    kind: str
    pid: int = 0
    code: int = 1
    text: bytes = b""


def parse_answer(data: bytes) -> Answer | None:
    """The message in ``data`` (``ready PID\\n`` or ``failed CODE LEN\\n`` and
    LEN bytes), None while it is incomplete; kind "none" if it is garbled."""
    head, newline, rest = data.partition(b"\n")
    if not newline:
        return None
    words = head.split()
    try:
        if len(words) == 2 and words[0] == b"ready":
            return Answer("ready", pid=int(words[1]))
        if len(words) == 3 and words[0] == b"failed":
            code, size = int(words[1]), int(words[2])
            return Answer("failed", code=code, text=rest[:size]) if len(rest) >= size else None
    except ValueError:
        pass
    return Answer("none")


def read_answer(fd: int, timeout_s: float, held: Callable[[], str | None] | None = None) -> Answer:
    """Wait on the ready pipe for the session's one message (see ``Answer``);
    "held" (``text``: what ``held()`` said) once ``held()``, asked every
    ``HELD_POLL_S``, says the session is held by the kernel."""
    data = b""
    deadline = time.monotonic() + timeout_s
    while (answer := parse_answer(data)) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return Answer("timeout")
        why = held() if held is not None else None
        if why is not None:
            return Answer("held", text=why.encode())
        readable, _w, _x = select.select([fd], [], [], min(left, HELD_POLL_S))
        if readable:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return Answer("none")
            data += chunk
    return answer


def _wait_ready(name: str, ready_r: int, recording: Path, log: Path) -> int:
    """The caller's side: wait for "ready" (or the session's end)."""
    watch = kernelholds.MainHeld(HELD_START_S)

    def held() -> str | None:
        found = read_info(meta_path(name))
        if not isinstance(found, SessionInfo) or found.pid == os.getpid() or not found.alive:
            return None  # not forked yet, or gone: the pipe says so
        why = watch.check(found.pid)
        return None if why is None else f"PID {found.pid}: {why}"

    try:
        answer = read_answer(ready_r, READY_TIMEOUT_S, held)
    finally:
        os.close(ready_r)
    if answer.kind == "ready":
        print(f"probetop: session {name} started (PID {answer.pid})")
        print(f"  recording  {recording}")
        print(f"  log        {log}")
        print(f"  attach     probetop attach {name}")
        print(f"  stop       probetop stop {name}")
        return 0
    if answer.kind == "failed":  # the session removed its metadata: nothing is listed
        sys.stderr.write(answer.text.decode("utf-8", "replace"))
        return answer.code or 1
    if answer.kind == "held":
        print(f"probetop: error: session {name} is held by the kernel before its probes "
              f"started ({answer.text.decode()} for {HELD_START_S:g} s: the target does not "
              "answer); it ends when its I/O completes or fails (the device answers or is "
              f"removed); `probetop ls` lists it, see {log}", file=sys.stderr)  # fmt: skip
        return 1
    found = read_info(meta_path(name))
    info = found if isinstance(found, SessionInfo) else None
    if answer.kind == "timeout":
        state = f"still starting (PID {info.pid}): " if info is not None and info.alive else ""
        print(f"probetop: error: session {name} did not say it was ready in "
              f"{READY_TIMEOUT_S:g} s; {state}see {log}, `probetop ls`, `probetop stop {name}`",
              file=sys.stderr)  # fmt: skip
        return 1
    # No message: the session process was killed (or never forked) before
    # its header was written. It never started, so it is not listed; its
    # log (if it wrote one) is kept and named.
    with contextlib.suppress(OSError):
        sys.stderr.write(read_log(log).decode("utf-8", "replace"))
    if info is not None and (info.pid == os.getpid() or not info.alive):
        with contextlib.suppress(OSError):
            os.unlink(meta_path(name))
    print(f"probetop: error: session {name} ended before it started (log: {log})",
          file=sys.stderr)  # fmt: skip
    return 1


def read_log(log: Path, offset: int = 0) -> bytes:
    """The last ``ERROR_LIMIT`` bytes of the session's log from ``offset``:
    OSError unless it is a regular file (never a link planted there)."""
    fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        size = os.fstat(fd).st_size
        f.seek(max(offset, size - ERROR_LIMIT))
        return f.read(ERROR_LIMIT)


@dataclasses.dataclass(frozen=True, slots=True)
class LogStart:
    """Where this process's output begins in the log, and whether it made the file."""

    offset: int
    created: bool


def redirect_to_log(log: os.PathLike[str] | str) -> LogStart:
    """stdin from /dev/null; stdout and stderr to the session's log (0600)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # O_NOFOLLOW: a link planted at NAME.log never makes the session write elsewhere.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd, created = os.open(log, flags | os.O_CREAT | os.O_EXCL, 0o600), True
    except FileExistsError:  # an older file of that name: appended to, never removed
        fd, created = os.open(log, flags), False
    start = LogStart(os.fstat(fd).st_size, created)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return start


def _session_process(
    name: str,
    plan: RunPlan[Any],
    run: Callable[[RunPlan[Any]], int],
    ready_w: int,
    sock: Path,
    log: Path,
) -> int:
    """The background session itself (the grandchild); its exit status.

    It says "ready" on ``ready_w`` once its recorder wrote the header
    (``on_header``). If it ends before that, it never started: it removes
    its metadata (and its log, if it made it) and sends what it wrote there,
    its error, with its exit status. Only when no one reads that (the
    caller is gone) is it listed, as finished with no recording."""
    os.umask(0o077)
    log_start = redirect_to_log(log)
    ignore_hangup()
    assert plan.common.record is not None
    recording = plan.common.record
    info = _info(name, plan.common.argv, recording, sock, log, starting=True)
    write_info(info)
    reserve = Reserve()  # its exit status is written even on a disk the run fills
    server = ControlServer(
        Path(sock),
        status=lambda: {"name": name, "pid": os.getpid(), "recording": str(recording)},
        on_stop=lambda: os.kill(os.getpid(), signal.SIGTERM),
    )
    code = 1
    ready = _Ready(ready_w, recording, lambda: _mark_ready(info))
    from probetop.probes.record import on_header

    unhook = on_header(ready.header_written)
    try:
        server.start()
        code = run(plan)
    except (KeyboardInterrupt, Exception) as exc:
        code = _said_why(name, exc, started=ready.started)
    finally:
        code = _end(info, code, ready, unhook, server, log, log_start, reserve)
    return code


@stopsignals.uninterrupted
def _said_why(name: str, exc: BaseException, *, started: bool) -> int:
    """Say in the log why the run ended early; its exit status."""
    if isinstance(exc, KeyboardInterrupt):  # `stop`, kill, before the run's own handlers
        when = "while it ran" if started else "before its probes started"
        with contextlib.suppress(OSError):
            print(f"probetop: session {name} stopped ({stopsignals.pending() or 'signal'}) "
                  f"{when}", file=sys.stderr)  # fmt: skip
        return stopsignals.exit_status()
    with contextlib.suppress(OSError):  # a full disk: the log cannot say it
        print(f"probetop: error: session {name}: {exc}", file=sys.stderr)
    return int(getattr(exc, "exit_code", 1))


@stopsignals.uninterrupted
def _end(
    info: SessionInfo,
    code: int,
    ready: _Ready,
    unhook: Callable[[], None],
    server: ControlServer,
    log: Path,
    log_start: LogStart,
    reserve: Reserve,
) -> int:
    """The session's last steps, whatever stop signals come meanwhile (a
    burst of ``kill``, a `stop` that timed out and sent SIGTERM after the one
    its request caused): its exit status is written (without one it is listed "died")."""
    stopsignals.ignore_from_now()
    unhook()
    server.close()
    flush_output()  # a full disk: the exit status still follows
    if ready.started:
        code = ready.keep_recording(code)
        reserve.write(info.finished(code))
    else:
        _never_started(info, code, ready, log, log_start, reserve)
    ready.close()
    return code


def _say(message: str) -> None:
    """A warning in the session's log (its stderr), if it can be written."""
    with contextlib.suppress(OSError):
        print(f"probetop: warning: session: {message}", file=sys.stderr, flush=True)


def _copy_back(src: int, path: str, size: int) -> None:
    """Write ``size`` bytes of the open file ``src`` to a new file at ``path``
    (0600, never over an existing file), synced."""
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        done = 0
        while done < size:
            sent = os.copy_file_range(src, out, size - done, done, done)
            if sent == 0:
                break
            done += sent
        os.fsync(out)
    except OSError:
        os.unlink(path)  # not a torn copy in its place
        raise
    finally:
        os.close(out)


ERROR_LIMIT = 1 << 16
"""Bytes of a failed session's output sent to the caller (the end of it)."""


def _never_started(
    info: SessionInfo, code: int, ready: _Ready, log: Path, start: LogStart, reserve: Reserve
) -> None:
    """The session ended before its header was written: no entry for it
    stays, and its caller gets its output (see ``_session_process``)."""
    try:
        text = read_log(log, start.offset)
    except OSError as exc:
        text = f"probetop: error: session {info.name}: its log: {exc.strerror}\n".encode()
    with contextlib.suppress(OSError):
        os.unlink(meta_path(info.name))
    if ready.fail(code, text):
        reserve.close()
        if start.created:
            with contextlib.suppress(OSError):
                os.unlink(log)
        return
    # No one heard it: listed as finished with its status, no recording
    # claimed (it never wrote one), its error in the log.
    reserve.write(dataclasses.replace(info.finished(code), recording=""))


def _mark_ready(info: SessionInfo) -> None:
    """Rewrite the metadata as running (``ls`` said "starting" until now).
    Never raises: a metadata write that fails (a full disk) is said in the
    log, and the session runs on."""
    try:
        write_info(dataclasses.replace(info, starting=False))
    except OSError as exc:
        print(f"probetop: warning: session {info.name}: cannot mark it running in "
              f"{meta_path(info.name)}: {exc.strerror or exc}", file=sys.stderr)  # fmt: skip


def _info(
    name: str, argv: Any, recording: Path, sock: Path, log: Path, *, starting: bool
) -> SessionInfo:
    """This process's metadata for session ``name`` (the command is redacted
    when written)."""
    return SessionInfo(
        starting=starting,
        name=name,
        command=list(argv),
        started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        pid=os.getpid(),
        start_ticks=process_start_ticks(os.getpid()),
        recording=str(recording),
        socket=str(sock),
        log=str(log),
    )


class _Ready:
    """The session's end of the ready pipe: one message, then closed.

    Once ready it also holds the recording open (read-only): a recording
    deleted while the session ran (``rm``, a cleaner of old files) is
    written back at its path when the session ends (``keep_recording``)
    instead of vanishing with its last descriptor, which `stop` reported as
    a clean finish naming a file that no longer existed."""

    def __init__(self, fd: int, recording: Path, mark_ready: Callable[[], None]) -> None:
        self._fd: int | None = fd
        self._recording = os.path.realpath(recording)
        self._mark_ready = mark_ready
        self._held: int | None = None  # the recording, open since it was ready
        self.started = False  # this session's recording holds its header

    def header_written(self, path: Path) -> None:
        """``on_header``'s hook: say "ready" once it is this session's recording."""
        if self.started or os.path.realpath(path) != self._recording:
            return
        self.started = True
        with contextlib.suppress(OSError):
            self._held = os.open(self._recording, os.O_RDONLY | os.O_CLOEXEC)
        self._mark_ready()  # first: once the starter returns, `ls` says "running"
        self._send(f"ready {os.getpid()}\n".encode())
        self.close()

    def keep_recording(self, code: int) -> int:
        """``code``, once the recording is at its path. Deleted while the
        session ran: its whole content (the recorder has closed it, footer
        included) is written back there and the log says so; if that fails,
        or another file took its place, the log says where it was and the
        status is 74 (the recording could not be completed)."""
        held, self._held = self._held, None
        if held is None:
            return code
        try:
            mine = os.fstat(held)
            try:
                there = os.stat(self._recording)
            except FileNotFoundError:
                there = None
            if there is not None and (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                return code
            if there is not None:
                raise FileExistsError(errno.EEXIST, "another file has taken its place")
            _copy_back(held, self._recording, mine.st_size)
        except OSError as exc:
            _say(f"its recording {self._recording} was deleted while it ran and could not "
                 f"be written back: {exc.strerror or exc}")  # fmt: skip
            return RECORDING_INCOMPLETE_EXIT
        finally:
            os.close(held)
        _say(f"its recording {self._recording} was deleted while it ran: written back "
             f"({mine.st_size} bytes)")  # fmt: skip
        return code

    def fail(self, code: int, text: bytes) -> bool:
        """Send "failed" with ``code`` and ``text``; False if no one read it."""
        return self._send(f"failed {code} {len(text)}\n".encode() + text)

    def _send(self, message: bytes) -> bool:
        if self._fd is None:
            return False
        view = memoryview(message)
        try:
            while view:  # blocking: the caller is reading (or gone: EPIPE)
                view = view[os.write(self._fd, view) :]
        except OSError:
            return False
        return True

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
