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
    ) -> int:
        """Exit status of `python -c SRC ARGS` (negative: killed by that
        signal), as subprocess.run gives it."""
        req = {
            "src": src,
            "args": [os.fsencode(a).hex() for a in args],
            "env": dict(env),
            "cwd": os.getcwd(),
        }
        with contextlib.ExitStack() as stack:
            if stdin == subprocess.DEVNULL:
                stdin = stack.enter_context(open(os.devnull, "rb"))
            fds = [s if isinstance(s, int) else s.fileno() for s in (stdin, stdout, stderr)]
            body = stack.enter_context(tempfile.TemporaryFile())
            body.write(json.dumps(req).encode())
            body.seek(0)
            socket.send_fds(self._sock, [b"run"], [*fds, body.fileno()])
        self._sock.settimeout(timeout)
        pid = json.loads(self._sock.recv(1 << 16))["pid"]
        try:
            return int(json.loads(self._sock.recv(1 << 16))["status"])
        except TimeoutError:
            os.kill(pid, 9)
            self._sock.settimeout(None)
            self._sock.recv(1 << 16)
            raise subprocess.TimeoutExpired(["-c", src, *map(str, args)], timeout) from None

    def close(self) -> None:
        self._sock.close()  # the zygote reads an empty message and ends
        self._proc.wait(timeout=30)


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


def run_probetop(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, probetop.tui.main, *args],
    capture_output=True, text=True)``, forked from the zygote (stdin: /dev/null
    or ``input``)."""
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        stdin.write((input or "").encode())
        stdin.seek(0)
        code = zygote(*PRELOAD).run(
            _AS_MAIN,
            list(args),
            stdin=subprocess.DEVNULL if input is None else stdin,
            stdout=out,
            stderr=err,
            env=os.environ if env is None else env,
            timeout=timeout,
        )
        texts = []
        for f in (out, err):
            f.seek(0)
            data = f.read().decode(locale.getpreferredencoding(False))
            texts.append(data.replace("\r\n", "\n").replace("\r", "\n"))
    return subprocess.CompletedProcess(["-m", "probetop.tui.main", *args], code, *texts)
