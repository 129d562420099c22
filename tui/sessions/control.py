"""A detached session's control socket, and the client that talks to it.

Contract:
- ``ControlServer(path, status, on_stop).start()`` binds a Unix stream socket
  at ``path`` with mode 0600 (created under umask 077, then chmod) and serves
  it from one daemon thread; it blocks in ``accept`` between requests, so an
  idle session spends no CPU on it. Nothing listens on a network port.
- Every connection's peer credentials (``SO_PEERCRED``) are read first
  (``peer_uid``); a peer that is not this process's user gets
  ``{"ok": false, "error": "refused: ..."}`` and is closed before anything
  else is read.
- Protocol: one JSON object per line each way. ``{"op": "status"}`` answers
  ``{"ok": true, ...status()}``; ``{"op": "stop"}`` calls ``on_stop()`` and
  answers ``{"ok": true}`` (the session then stops as on SIGTERM).
- ``request(path, op)`` is the client: the answer as a dict, or SessionError
  when nothing answers or the socket is served by another user (checked
  with ``SO_PEERCRED`` before anything is sent: a socket planted at the
  path cannot answer for a session). ``stop_session(info)`` asks a session to stop and
  waits until it wrote its exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probetop.probes.core import kernelholds
from probetop.tui.sessions.registry import SessionError, SessionInfo, meta_path, read_info

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
MAX_REQUEST_BYTES = 4096
TIMEOUT_S = 5.0
STOP_HELD_S = 2.0
"""How long ``stop_session`` lets the session's main thread be seen blocked in
the kernel (it cannot act on the stop) before it says so and returns: the
waiter's ``STOP_GRACE_S`` for a detached session."""


def peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end of ``conn`` (SO_PEERCRED)."""
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    _pid, uid, _gid = _UCRED.unpack(raw)
    return int(uid)


class ControlServer:
    """Serves one session's control socket from a daemon thread."""

    def __init__(
        self,
        path: Path,
        status: Callable[[], dict[str, Any]],
        on_stop: Callable[[], None],
    ) -> None:
        self.path = path
        self.status = status
        self.on_stop = on_stop
        self.refused = 0
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind (mode 0600) and serve. SessionError if the path is taken."""
        if len(os.fsencode(self.path)) >= 104:
            raise SessionError(f"socket path too long for a Unix socket: {self.path}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # left by a session that died (callers check it is not live)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old = os.umask(0o077)
        try:
            sock.bind(str(self.path))
        except OSError as exc:
            sock.close()
            raise SessionError(f"cannot bind {self.path}: {exc.strerror}") from None
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(8)
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def _serve(self) -> None:
        while self._sock is not None:
            try:
                conn, _addr = self._sock.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError, ValueError):
                self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(TIMEOUT_S)
        uid = peer_uid(conn)
        if uid != os.getuid():
            self.refused += 1
            _send(conn, {"ok": False, "error": f"refused: uid {uid} is not the session's user"})
            return
        request = json.loads(_read_line(conn) or b"{}")
        op = request.get("op") if isinstance(request, dict) else None
        if op == "status":
            _send(conn, {"ok": True, **self.status()})
        elif op == "stop":
            _send(conn, {"ok": True})
            self.on_stop()
        else:
            _send(conn, {"ok": False, "error": f"unknown op {op!r}"})


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while b"\n" not in data and len(data) < MAX_REQUEST_BYTES:
        chunk = conn.recv(MAX_REQUEST_BYTES)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0]


def _send(conn: socket.socket, obj: dict[str, Any]) -> None:
    conn.sendall(json.dumps(obj).encode() + b"\n")


def request(path: str | Path, op: str, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """Send ``{"op": op}`` to the socket at ``path``; its answer. SessionError
    when the socket is missing, nothing listens, or the answer is refused."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
        uid = peer_uid(sock)
        if uid != os.getuid():
            raise SessionError(f"{path} is served by uid {uid}, not by you: not a session of yours")
        # A refused peer is answered and closed before its request is read:
        # the write then fails (EPIPE) but the refusal is there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            _send(sock, {"op": op})
        answer = json.loads(_read_line(sock) or b"{}")
    except (OSError, ValueError) as exc:
        raise SessionError(f"no answer on {path}: {exc}") from None
    finally:
        sock.close()
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise SessionError(f"{path}: {error or 'bad answer'}")
    return answer


def stop_session(info: SessionInfo, wait_s: float = 30.0) -> SessionInfo | None:
    """Ask ``info``'s session to stop (control socket; SIGTERM if the socket
    does not answer while the process lives) and wait until it wrote its
    exit status; its metadata then, or None if it ended before it started
    (a session that never started removes its metadata: nothing is listed).
    SessionError if it did not within ``wait_s``.

    A session still "starting" may not serve its socket yet, and its
    metadata may still name the `--detach` command that claimed the name:
    the request is retried until it answers (or the session is gone), never
    replaced by a SIGTERM that could reach that command instead."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            request(info.socket, "stop")
            break
        except SessionError:
            now = read_info(meta_path(info.name))
            if now is None:
                return None  # it ended before it started
            if isinstance(now, SessionInfo):
                info = now
            if not info.alive:
                if info.state == "finished":
                    return info
                raise
            if info.state == "running":
                os.kill(info.pid, signal.SIGTERM)  # our own session; its socket is gone
                break
            if time.monotonic() >= deadline:
                raise SessionError(
                    f"session {info.name} did not answer while starting in {wait_s:g} s "
                    f"(PID {info.pid})"
                ) from None
            time.sleep(0.05)
    watch = kernelholds.MainHeld(STOP_HELD_S)
    while time.monotonic() < deadline:
        now = read_info(meta_path(info.name))
        if now is None:
            return None
        if isinstance(now, SessionInfo) and not now.live:
            return now
        why = watch.check(info.pid) if info.alive else None
        if why is not None:
            raise SessionError(
                f"session {info.name} cannot act on the stop: its main thread is blocked in "
                f"the kernel ({why}, for {STOP_HELD_S:g} s: a target that does not answer); "
                f"PID {info.pid} is left to the kernel: it ends, and writes its report, when "
                "its I/O completes or fails (the device answers or is removed)"
            )
        time.sleep(0.1)
    raise SessionError(f"session {info.name} did not stop within {wait_s:g} s (PID {info.pid})")
