"""`python -c SRC ARGS` for tables of CLI cases, forked from a pre-imported
interpreter (tests only).

Each `python -m probetop.tui.main` a test starts spends 0.2-0.3 CPU-s and,
on a loaded 2-core machine, 0.5-2 s of wall time importing before it looks
at its arguments; a table of a hundred hostile command lines pays that a
hundred times. A ``Zygote`` is one interpreter, single-threaded so that
fork is safe, that imports the given modules once and then forks a child
per run. Each run is still a process of its own: its own argv, environment,
stdin/stdout/stderr, exit status, peak memory (VmHWM) and exit handlers
(non-daemon threads joined, atexit run, stdio flushed, as the interpreter
does at exit). What it does not repeat is the interpreter's start-up and
imports, so it is only for cases that test what the program does with its
arguments and input (parsing, refusals, messages, exit codes); keep at least
one case per table that starts the real `python -m probetop.tui.main`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import locale
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import IO, Any

# The zygote's own program. It never starts a thread, so a fork copies all
# of its state. A request is a datagram (SOCK_SEQPACKET) carrying four
# descriptors (SCM_RIGHTS): the child's stdin, stdout and stderr, and a file
# holding the request as JSON (an argument may be 100 kB: more than a
# datagram may carry).
_ZYGOTE = r"""
import atexit, importlib, json, os, signal, socket, sys, threading, traceback
sock = socket.socket(fileno=int(sys.argv[1]))
for name in sys.argv[2:]:
    importlib.import_module(name)

def child(req, fds):
    sock.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    if req["setsid"]:
        os.setsid()
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    sys.argv = ["-c", *(os.fsdecode(bytes.fromhex(a)) for a in req["args"])]
    code = 1
    try:
        try:
            exec(compile(req["src"], "<string>", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)

while True:
    msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 4)
    if not msg:
        break
    with os.fdopen(fds.pop(), "rb") as f:
        req = json.loads(f.read())
    pid = os.fork()
    if pid == 0:
        child(req, fds)
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    sock.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
"""


class Zygote:
    """An interpreter with ``preload`` imported, forking `python -c` runs."""

    def __init__(self, preload: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(theirs.fileno()), *preload],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=dict(os.environ if env is None else env),
        )
        theirs.close()
        self._running: Forked | None = None

    def spawn(
        self,
        src: str,
        args: Sequence[str | bytes],
        *,
        stdin: IO[Any] | int,
        stdout: IO[Any] | int,
        stderr: IO[Any] | int,
        env: Mapping[str, str],
        start_new_session: bool = False,
        cwd: str | os.PathLike[str] | None = None,
    ) -> Forked:
        """Start `python -c SRC ARGS` and return at once (one run at a time
        per zygote: it waits for each child before it forks the next)."""
        if self._running is not None and self._running.poll() is None:
            raise RuntimeError("this zygote is still running a child")
        req = {
            "src": src,
            "args": [os.fsencode(a).hex() for a in args],
            "env": dict(env),
            "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
            "setsid": start_new_session,
        }
        with contextlib.ExitStack() as stack:
            if stdin == subprocess.DEVNULL:
                stdin = stack.enter_context(open(os.devnull, "rb"))
            fds = [s if isinstance(s, int) else s.fileno() for s in (stdin, stdout, stderr)]
            body = stack.enter_context(tempfile.TemporaryFile())
            body.write(json.dumps(req).encode())
            body.seek(0)
            socket.send_fds(self._sock, [b"run"], [*fds, body.fileno()])
        self._sock.settimeout(60)
        pid = json.loads(self._sock.recv(1 << 16))["pid"]
        self._sock.settimeout(None)
        self._running = Forked(self._sock, pid, ["-c", src, *map(str, args)])
        return self._running

    def run(
        self,
        src: str,
        args: Sequence[str | bytes],
        *,
        stdin: IO[Any] | int,
        stdout: IO[Any],
        stderr: IO[Any],
        env: Mapping[str, str],
        timeout: float = 120,
        cwd: str | os.PathLike[str] | None = None,
    ) -> int:
        """Exit status of `python -c SRC ARGS` (negative: killed by that
        signal), as subprocess.run gives it."""
        child = self.spawn(src, args, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd)
        try:
            return child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise

    def close(self) -> None:
        self._sock.close()  # the zygote reads an empty message and ends
        self._proc.wait(timeout=30)


class Forked:
    """A run forked by a zygote: what the tests use of subprocess.Popen
    (pid, poll, wait, send_signal, kill, returncode). The zygote reaps the
    child and sends its status; until then the pid is the child's."""

    def __init__(self, sock: socket.socket, pid: int, args: list[str]) -> None:
        self._sock = sock
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def _status(self, timeout: float | None) -> None:
        self._sock.settimeout(timeout)
        try:
            msg = self._sock.recv(1 << 16)
        finally:
            self._sock.settimeout(None)
        self.returncode = int(json.loads(msg)["status"])

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self._status(0)
            except (BlockingIOError, TimeoutError):
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                self._status(timeout)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """As Popen's: nothing once the run has ended. The zygote, not this
        process, reaps it, so it can be gone between ``poll`` and the kill
        (CI: ProcessLookupError right after a run ended on the first signal)."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(9)


_ZYGOTES: dict[tuple[str, ...], Zygote] = {}


def zygote(*preload: str) -> Zygote:
    """One zygote per test process and preload list, ended at exit."""
    key = tuple(preload)
    if key not in _ZYGOTES:
        _ZYGOTES[key] = Zygote(preload)
        atexit.register(_ZYGOTES[key].close)
    return _ZYGOTES[key]


# `python -m probetop.tui.main`, as the zygote's `-c` program: run as
# __main__ beside the imported module, as `-m` does when something imports it.
_AS_MAIN = (
    "import runpy, sys\nsys.modules.pop('probetop.tui.main', None)\n"
    "runpy.run_module('probetop.tui.main', run_name='__main__', alter_sys=True)"
)
# What the CLI imports for most commands, so that forked runs skip them.
PRELOAD = ("probetop.tui.main", "probetop.tui.cli.parser", "probetop.tui.commands.probe")
# And what a measuring run of cpu or mem imports (numpy, numba and llvmlite's
# binding: ~0.3 CPU-s of a 0.6 CPU-s start); none starts a thread at import.
RUN_PRELOAD = (
    *PRELOAD,
    "probetop.probes.cpu.family",
    "probetop.probes.mem",
    "probetop.probes.system",
    "numpy",
    "llvmlite.binding",
    "numba",
)


def run_probetop(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    preload: Sequence[str] = PRELOAD,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, probetop.tui.main, *args],
    capture_output=True, text=True)``, forked from the zygote (stdin: /dev/null
    or ``input``). ``preload``: the modules the zygote imports first (a table
    of runs of one family spares their imports too: ``RUN_PRELOAD``);
    ``cwd``: the child's working directory (else the caller's)."""
    done = run_probetop_bytes(
        args,
        env=env,
        timeout=timeout,
        preload=preload,
        cwd=cwd,
        input=None if input is None else input.encode(),
    )
    texts = []
    for data in (done.stdout, done.stderr):
        text = data.decode(locale.getpreferredencoding(False))
        texts.append(text.replace("\r\n", "\n").replace("\r", "\n"))
    return subprocess.CompletedProcess(done.args, done.returncode, *texts)


def spawn_probetop(
    args: Sequence[str],
    *,
    stdout: IO[Any] | int,
    stderr: IO[Any] | int,
    env: Mapping[str, str] | None = None,
    start_new_session: bool = False,
    preload: Sequence[str] = RUN_PRELOAD,
) -> Forked:
    """``subprocess.Popen([python, -m, probetop.tui.main, *args], ...)``
    forked from the zygote, returned at once (stdin /dev/null): for tests
    that signal a run once it is measuring and time its stop, where the
    start-up is not what they test."""
    return zygote(*preload).spawn(
        _AS_MAIN,
        list(args),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env=os.environ if env is None else env,
        start_new_session=start_new_session,
    )


def run_probetop_bytes(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    preload: Sequence[str] = PRELOAD,
    cwd: str | os.PathLike[str] | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """As ``run_probetop``, stdout and stderr as the bytes written (stdin:
    /dev/null or ``input``)."""
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        stdin.write(input or b"")
        stdin.seek(0)
        code = zygote(*preload).run(
            _AS_MAIN,
            list(args),
            stdin=subprocess.DEVNULL if input is None else stdin,
            stdout=out,
            stderr=err,
            env=os.environ if env is None else env,
            timeout=timeout,
            cwd=cwd,
        )
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["-m", "probetop.tui.main", *args], code, out.read(), err.read()
        )
