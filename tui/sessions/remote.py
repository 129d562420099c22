"""Remote views over SSH: probes on HOST, panes here.

Contract:
- Everything goes through the system ``ssh`` client (``$PROBETOP_SSH``,
  default ``ssh``, split like a shell would), so ~/.ssh/config, agents,
  ProxyJump, known_hosts and keys work as they do for the user; probetop
  adds ``BatchMode=yes`` (a view cannot answer a password prompt: keys or
  an agent are needed), ``ConnectTimeout=10``, ``ServerAliveInterval=5``,
  ``ServerAliveCountMax=3`` and ``Compression=yes``. On HOST it runs ``$PROBETOP_REMOTE`` (default
  ``probetop``, found on the PATH of ssh's non-interactive shell).
- ``run_remote_plan(plan, show)``: ``probetop --remote HOST ...``. A probe
  command, ``demo`` or the passive panes in a terminal: started on HOST as a
  detached session (``--detach --name NAME``, NAME chosen here), then shown
  here by a remote view; ``d`` leaves it running, ``q`` asks whether to stop
  it. With ``--detach``, ``--headless``, ``--json`` or no terminal, and for
  ``ls``, ``stop`` and ``follow``: the same command line runs on HOST and its
  output and exit status come back as they are. ``attach NAME``: a remote
  view of a session already running there. ``replay``, ``report``,
  ``compare`` and ``export`` read local files: refused (exit 2).
- A remote view reads ``probetop follow NAME --from-line N --compact
  --batch S`` over ssh (``viewcodec.py``; S: ``link_batch_s``): the
  recording's lines, checked here line by line as a local view checks them
  (``decode_line``). Only those lines travel, never screen updates. The
  samples of a live batch are handed to the panes at the pace they were
  taken (``_hold_played``), about S later than on HOST. If the
  link drops (ssh exits, or no byte at all for ``STALL_S`` although the far
  side sends a keepalive every 2 s), the view says "reconnecting" and runs
  ssh again after ``BACKOFF_S`` (1, 2, 4, 8, 15, then every 30 s), from the
  line after the last whole line it has: no gap, no duplicate. The session
  on HOST is not affected: it never waits for a view.
- Ctrl-C while a session is being started there or its view opened: the
  command says the session may be running on HOST, with the commands to
  see and stop it, and exits 130 (ssh ends; a session never stops because
  a link did).
- Failures are one line and exit 2: ssh's own error (unknown host, refused,
  authentication, host key), ``probetop`` missing on HOST (with the command
  that installs it there), a session that does not exist there.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from probetop.probes import __version__
from probetop.probes.core.sample import Record
from probetop.probes.record import RecordingError, decode_line
from probetop.tui import commands
from probetop.tui.cli.plan import RunPlan
from probetop.tui.run.viewconfig import AppConfig, AttachView, Display
from probetop.tui.sessions.attach import AttachedSession
from probetop.tui.sessions.registry import SessionError, SessionInfo, check_name, default_name
from probetop.tui.sessions.secretargs import private_args
from probetop.tui.sessions.viewcodec import LinkError, ViewDecoder

SSH_ENV = "PROBETOP_SSH"
REMOTE_ENV = "PROBETOP_REMOTE"
SSH_OPTIONS = (
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
    # JSON lines compress about 5x: the link carries less than the TUI itself would.
    "-o",
    "Compression=yes",
)
STALL_S = 10.0
# The host sends the view's samples every LINK_BATCH_S (`follow --batch`,
# $PROBETOP_REMOTE_BATCH): an SSH packet costs ~40 bytes, more than a second
# of samples. The view plays each batch out at the pace the samples were
# taken, so every interval is drawn for as long as in a local run, about
# LINK_BATCH_S later.
BATCH_ENV = "PROBETOP_REMOTE_BATCH"
LINK_BATCH_S = 3.0
LINK_BATCH_MAX_S = 5.0  # follow's bound: a batch well inside STALL_S
PLAYOUT_BATCHES = 8  # the delay is the least a batch took over this many
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
COMMAND_TIMEOUT_S = 120.0
PASSTHROUGH = ("ls", "stop", "rm", "follow")
LOCAL_ONLY = ("replay", "report", "compare", "export")
SSH_FAILED = 255  # ssh's own exit status for a connection or authentication failure
NOT_FOUND = 127  # a shell's "command not found"
USAGE_EXIT = 2  # probetop's own refusal (bad input, no such session)


def link_batch_s() -> float:
    """The view's batch period: $PROBETOP_REMOTE_BATCH seconds, else LINK_BATCH_S."""
    text = os.environ.get(BATCH_ENV, "").strip()
    if not text:
        return LINK_BATCH_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= LINK_BATCH_MAX_S:
        raise SessionError(
            f"{BATCH_ENV}={text!r}: expected seconds between the remote view's batches, "
            f"more than 0 and at most {LINK_BATCH_MAX_S:g} (default {LINK_BATCH_S:g})"
        )
    return value


def check_host(host: str) -> str:
    """``[USER@]HOST`` as ssh takes it (an alias of ~/.ssh/config included)."""
    if not host or host.startswith("-") or any(c.isspace() or c in "'\"`$;|&<>" for c in host):
        raise SessionError(f"--remote {host!r}: expected [USER@]HOST")
    return host


def ssh_argv(
    host: str, args: list[str], *, tty: bool = False, compression: bool = True
) -> list[str]:
    """The ssh command line that runs ``probetop ARGS`` on ``host``
    (``compression`` False: the stream is compressed already)."""
    ssh = shlex.split(os.environ.get(SSH_ENV) or "ssh")
    remote = shlex.split(os.environ.get(REMOTE_ENV) or "probetop")
    options = SSH_OPTIONS if compression else (*SSH_OPTIONS[:-1], "Compression=no")
    return [
        *ssh,
        *options,
        *(["-t"] if tty else ["-T"]),
        "--",
        host,
        shlex.join([*remote, *args]),
    ]


def _stdin(secret: bytes | None) -> dict[str, Any]:
    """ssh's stdin: the arguments that hold secrets, or nothing."""
    if secret is None:
        return {"stdin": subprocess.DEVNULL}
    return {"input": secret.decode()}


def missing_message(host: str) -> str:
    remote = os.environ.get(REMOTE_ENV) or "probetop"
    return (
        f"`{remote}` was not found on {host} (not installed, or not on the PATH of "
        f"ssh's non-interactive shell: set {REMOTE_ENV} to its full path). Install it there "
        f"with:  ssh {host} python3 -m pip install --user 'probetop=={__version__}'"
    )


def _failure(host: str, code: int, stderr: str) -> SessionError | None:
    """The error a finished ssh command stands for, or None."""
    text = stderr.strip()
    last = text.splitlines()[-1] if text else ""
    if (
        code == NOT_FOUND
        or "command not found" in text
        or (code == SSH_FAILED and "No such file or directory" in text)
    ):
        return SessionError(missing_message(host))
    if code == SSH_FAILED:
        return SessionError(f"ssh {host} failed: {last or 'exit status 255'}")
    return None


def run_remote(
    host: str, args: list[str], *, capture: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``probetop ARGS`` on ``host``; SessionError for ssh's own failures.
    Secrets in ARGS go over ssh's stdin, never on a command line (``secretargs``)."""
    shown, secret = private_args(args)
    argv = ssh_argv(host, shown)
    try:
        done = subprocess.run(
            argv,
            **_stdin(secret),
            capture_output=capture,
            stderr=None if capture else subprocess.PIPE,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise SessionError(f"cannot run {argv[0]!r}: is the ssh client installed?") from None
    except subprocess.TimeoutExpired:
        raise SessionError(f"ssh {host}: no answer in {COMMAND_TIMEOUT_S:g} s") from None
    error = _failure(host, done.returncode, done.stderr or "")
    if error is not None:
        raise error
    return done


def remote_info(host: str, name: str) -> SessionInfo:
    """The session ``name`` on ``host`` (from its ``ls --json``)."""
    done = run_remote(host, ["ls", "--json"])
    try:
        rows = json.loads(done.stdout)["sessions"]
    except (ValueError, KeyError, TypeError):
        raise SessionError(f"{host}: unexpected answer from `probetop ls --json`") from None
    for row in rows:
        if row.get("name") == name:
            return SessionInfo(
                name=name,
                command=list(row.get("command") or []),
                started_at=str(row.get("started_at") or ""),
                pid=int(row.get("pid") or 0),
                start_ticks=None,
                recording=str(row.get("recording") or ""),
                socket="",
                log="",
                exit_code=row.get("exit_code"),
                extra={"host": host, "state": row.get("state")},
            )
    raise SessionError(f"no session named {name!r} on {host} (`probetop ls --remote {host}`)")


class RemoteFollower:
    """A session's recording read over ssh (``probetop follow``), with the
    interface of ``RecordingFollower`` that ``AttachedSession`` uses."""

    def __init__(self, host: str, name: str) -> None:
        self.host = host
        self.name = name
        self.header: dict[str, Any] | None = None
        self.footer: dict[str, Any] | None = None
        self.lines = 0  # whole recording lines received: where a resume starts
        self.size = 0  # bytes received
        self.caught_up = False
        self.link = "connecting"  # "up", "reconnecting", "ended"
        self.reconnects = 0
        self.ended_there = False  # follow ended by itself (the session's end, a refusal)
        self.last_error = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._last_byte = 0.0
        self._attempt = 0
        self.next_try = 0.0
        self.compact = True  # follow --compact (False: a probetop there without it)
        self._decoder: ViewDecoder | None = None
        # Records decoded but not yet due: (due, record), in the recording's order
        self._held: deque[tuple[float, tuple[float, Record]]] = deque()
        self._delays: deque[float] = deque(maxlen=PLAYOUT_BATCHES)
        self.batch_s = link_batch_s()
        self._connect()

    def _connect(self) -> None:
        args = ["follow", self.name, "--from-line", str(self.lines)]
        if self.compact:
            args += ["--compact", "--batch", f"{self.batch_s:g}"]
            self._decoder = ViewDecoder()  # one stream per connection
        else:
            self._decoder = None
        argv = ssh_argv(self.host, args, compression=not self.compact)
        self._proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # the terminal's signals are the view's, not ssh's
        )
        assert self._proc.stdout is not None and self._proc.stderr is not None
        os.set_blocking(self._proc.stdout.fileno(), False)
        os.set_blocking(self._proc.stderr.fileno(), False)
        self._buf = b""
        self._last_byte = time.monotonic()

    def poll(self, max_bytes: int = 64 << 20) -> list[tuple[float, Record]]:
        """Records of the whole lines that arrived since the last call, the
        live batches' as they fall due (``_hold_played``)."""
        now = time.monotonic()
        if self._proc is None:
            if self.link == "reconnecting" and now >= self.next_try:
                self._connect()
            else:
                self.caught_up = True
                return self._due(now)
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        chunks: list[bytes] = []
        got = 0
        eof = False
        self.caught_up = False
        while got < max_bytes:
            try:
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                self.caught_up = True
                break
            if not chunk:
                eof = True
                self.caught_up = True
                break
            chunks.append(chunk)
            got += len(chunk)
        if got:
            self._last_byte = now
            self.size += got
            lines, coded = self._lines(b"".join(chunks), proc)
            played: list[tuple[float, Record]] = []
            for raw, live in zip(lines, coded, strict=True):
                self.lines += 1
                where = f"{self.host}:{self.name}: line {self.lines}"
                decoded = decode_line(raw, self.header, self.footer, where)
                self.header, self.footer = decoded.header, decoded.footer
                if live:
                    played.extend(decoded.records)
                else:
                    self._hold_played(played, now)
                    played = []
                    self._hold(decoded.records, now)
            self._hold_played(played, now)
            if self.link != "up":
                self.link = "up"
                self._attempt = 0
        if eof:
            self._ended(proc)
        elif now - self._last_byte > STALL_S:
            self.last_error = f"link lost (no data for {STALL_S:g} s)"
            self._drop(proc)
        return self._due(now)

    def _hold(self, records: list[tuple[float, Record]], due: float) -> None:
        self._held.extend((due, r) for r in records)

    def _hold_played(self, records: list[tuple[float, Record]], now: float) -> None:
        """A live batch: each record due as long after the batch's first as it
        was taken after it, the whole batch as late as the quickest recent
        batch came (the host's pace, whatever the clocks of both hosts say)."""
        if not records:
            return
        first = min(t for t, _ in records)
        self._delays.append(now - first)
        delay = min(self._delays)
        self._held.extend((max(now, t + delay), (t, r)) for t, r in records)

    def _due(self, now: float) -> list[tuple[float, Record]]:
        """The held records due by ``now`` (all of them once the session or
        the link ended: nothing more is coming to pace them)."""
        out: list[tuple[float, Record]] = []
        held = self._held
        flush = self.footer is not None or self.link in ("ended", "reconnecting")
        while held and (flush or held[0][0] <= now):
            out.append(held.popleft()[1])
        return out

    def _lines(self, data: bytes, proc: subprocess.Popen[bytes]) -> tuple[list[bytes], list[bool]]:
        """The whole recording lines ``data`` completes (keepalives dropped),
        and for each whether it came in a live batch (played out)."""
        if self._decoder is not None:
            try:
                fed = self._decoder.feed(data)
            except LinkError as exc:
                self.close()  # nothing more can be read from it: leave no ssh behind
                raise RecordingError(f"{self.host}:{self.name}: bad view stream: {exc}") from None
            return fed.lines, fed.coded
        data = self._buf + data
        cut = data.rfind(b"\n") + 1
        self._buf = data[cut:]
        lines = [raw for raw in data[:cut].split(b"\n")[:-1] if raw]
        return lines, [False] * len(lines)

    def _ended(self, proc: subprocess.Popen[bytes]) -> None:
        code = proc.wait()
        err = b""
        with contextlib.suppress(OSError, ValueError):
            assert proc.stderr is not None
            err = proc.stderr.read() or b""
        self._close(proc)
        self._proc = None
        text = err.decode("utf-8", "replace")
        if self.footer is not None or code == 0:
            self.link = "ended"  # the session ended (its footer, or it died there)
            self.ended_there = True
            return
        error = _failure(self.host, code, text)
        said = text.strip().splitlines()
        if self.compact and code == USAGE_EXIT and ("--compact" in text or "--batch" in text):
            # A probetop there from before this compact link: the plain one, at once
            self.compact = False
            self._connect()
            return
        if code == USAGE_EXIT or (error is not None and "not found" in str(error)):
            # probetop there refused (no such session, a probetop without
            # `follow`) or is missing: retrying cannot help
            self.link = "ended"
            self.ended_there = True
            reason = str(error) if error is not None else (said[-1] if said else f"exit {code}")
            raise RecordingError(f"{self.host}: {reason}")
        self.last_error = f"link lost ({said[-1] if said else f'ssh exit {code}'})"
        self._schedule()

    def _drop(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        self._close(proc)
        self._schedule()

    def _schedule(self) -> None:
        self._proc = None
        self._buf = b""  # a cut line is sent again whole: the resume starts at it
        self.link = "reconnecting"
        self.reconnects += 1
        delay = BACKOFF_S[min(self._attempt, len(BACKOFF_S) - 1)]
        self._attempt += 1
        self.next_try = time.monotonic() + delay

    @staticmethod
    def _close(proc: subprocess.Popen[bytes]) -> None:
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    @property
    def trying(self) -> bool:
        """A reconnection attempt is under way (ssh started, nothing back yet)."""
        return self.link == "reconnecting" and self._proc is not None

    def tail(self, max_bytes: int) -> list[tuple[float, Record]]:
        return []

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
            self._close(proc)
        self.link = "ended"


@dataclass
class RemoteAttachedSession(AttachedSession):
    """An attached view of a session on another host (see the module docstring)."""

    host: str = ""
    _remote: RemoteFollower | None = field(default=None, repr=False)

    @classmethod
    def open_remote(cls, host: str, name: str) -> RemoteAttachedSession:
        info = remote_info(host, name)
        follower = RemoteFollower(host, name)
        return cls(info, follower, str(info.extra.get("state") or "running"), host=host,
                   _remote=follower)  # fmt: skip

    @property
    def name(self) -> str:
        return f"{self.info.name} on {self.host}"

    def preview(self) -> list[tuple[float, Record]]:
        return []  # the history arrives as one stream, read a slice per frame

    @property
    def state(self) -> str:
        remote = self._remote
        if remote is None or remote.footer is not None:
            return "finished"
        if remote.link == "reconnecting":
            if remote.trying:  # ssh may wait up to ConnectTimeout: not "in 0 s" all along
                return f"reconnecting now (attempt {remote.reconnects}): {remote.last_error}"
            wait = max(1, math.ceil(remote.next_try - time.monotonic()))  # never "in 0 s"
            return f"reconnecting in {wait} s: {remote.last_error}"
        if remote.link == "ended":
            return "ended" if self._state in ("starting", "running") else self._state
        return "running"

    @property
    def runs_on(self) -> bool:
        """The session was running there when the view closed: neither its end
        (the footer, or its link ending on its own) nor a stop from here.
        (``state`` cannot say: closing the view ends the link.)"""
        remote = self._remote
        return (
            remote is not None
            and remote.footer is None
            and not remote.ended_there
            and self._state in ("starting", "running")
        )

    def stop(self, wait_s: float = 30.0) -> SessionInfo:
        done = run_remote(self.host, ["stop", self.info.name, "--wait", f"{wait_s:g}"])
        if done.returncode != 0:
            said = (done.stderr or done.stdout or "").strip().splitlines()
            raise SessionError(said[-1] if said else f"stop failed on {self.host}")
        self._state = "finished"
        return self.info


def _strip_remote(argv: list[str]) -> list[str]:
    """The command line without ``--remote HOST`` (either spelling)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--remote":
            skip = True
        elif not arg.startswith("--remote="):
            out.append(arg)
    return out


def run_remote_plan(plan: RunPlan[Any], show: Callable[[AppConfig], int]) -> int:
    """``probetop --remote HOST ...`` (see the module docstring)."""
    host = check_host(plan.common.remote or "")
    command = plan.command
    args = _strip_remote(list(plan.common.argv[1:]))
    if command in LOCAL_ONLY:
        raise SessionError(
            f"--remote: `{command}` reads a file on this machine; copy the recording here "
            f"(scp {host}:FILE .) or run `probetop {command}` on {host}"
        )
    if command == "attach":
        name = getattr(plan.settings, "session", None)
        if not name:
            raise SessionError("attach --remote HOST NAME: give the session's name")
        if plan.common.wants_headless:
            raise SessionError("attach needs a terminal")
        link_batch_s()  # a bad $PROBETOP_REMOTE_BATCH: said before anything starts
        return _view(host, check_name(name), plan, show)
    interactive = command is None or command in (*commands.PROBE_COMMANDS, "demo")
    if (
        command in PASSTHROUGH
        or not interactive
        or plan.common.wants_headless
        or plan.common.detach
    ):
        return _passthrough(host, args)
    link_batch_s()  # a bad $PROBETOP_REMOTE_BATCH: said before a session starts there
    name = check_name(plan.common.name or default_name(command))
    if not plan.common.name:
        args += ["--name", name]
    if command in commands.PROBE_COMMANDS and not plan.common.with_system:
        args.append("--with-system")  # the panes a local dashboard shows beside the probe
    try:
        started = run_remote(host, [*args, "--detach"])
        if started.returncode != 0:
            sys.stderr.write(started.stderr or "")
            sys.stdout.write(started.stdout or "")
            return started.returncode
        return _view(host, name, plan, show)
    except KeyboardInterrupt:
        # Ctrl-C ends ssh here, not the session there: once HOST's
        # `--detach` has claimed the name, the session starts on without
        # anyone watching. Nothing was said, and it ran on unnoticed.
        said = (
            f"probetop: interrupted; session {name} may have started on {host} and keeps "
            f"running there\n  see        probetop ls --remote {host}\n"
            f"  stop       probetop stop --remote {host} {name}"
        )
        with contextlib.suppress(OSError):  # a terminal that hung up
            print(said, file=sys.stderr)
        raise


def _view(host: str, name: str, plan: RunPlan[Any], show: Callable[[AppConfig], int]) -> int:
    attached = RemoteAttachedSession.open_remote(host, name)
    config = AttachView(
        attached,
        Display(
            theme=plan.common.theme,
            command=tuple(plan.common.argv),
            title=f"probetop {name} on {host}",
        ),
    )
    code = show(config)
    if attached.runs_on:
        print(f"probetop: session {name} keeps running on {host}")
        print(f"  attach     probetop attach --remote {host} {name}")
        print(f"  stop       probetop stop --remote {host} {name}")
    return code


def _passthrough(host: str, args: list[str]) -> int:
    """Run the command on ``host`` with its output here, as it comes."""
    shown, secret = private_args(args)
    argv = ssh_argv(host, shown)
    try:
        done = subprocess.run(argv, **_stdin(secret), stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise SessionError(f"cannot run {argv[0]!r}: is the ssh client installed?") from None
    error = _failure(host, done.returncode, done.stderr or "")
    if error is not None:
        raise error
    sys.stderr.write(done.stderr or "")
    return done.returncode
