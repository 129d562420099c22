"""The dashboard in a real pseudo-terminal, for tests that signal or hang it up.

``PtySession.start(args)`` runs ``probetop ARGS`` in a 120x40 pty (its own
session; optionally the pty is its controlling terminal, as sshd makes it, so
closing the master delivers a real SIGHUP). Everything the app writes is
drained into ``output`` by a thread: a full pty would block the app.
``close()`` kills the process if it still runs and closes the master.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass, field

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


@dataclass
class PtySession:
    proc: subprocess.Popen[bytes]
    master: int
    output: bytearray = field(default_factory=bytearray)
    _reader: threading.Thread | None = None

    @classmethod
    def start(
        cls, args: list[str], *, controlling: bool = False, env: dict[str, str] | None = None
    ) -> PtySession:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = dict(os.environ, **(env or {}), TERM="xterm-256color", COLUMNS="120", LINES="40")
        proc = subprocess.Popen(
            [*PROBETOP, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            close_fds=True,
            preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if controlling else None,
        )
        os.close(slave)
        session = cls(proc, master)
        session._reader = threading.Thread(target=session._drain, daemon=True)
        session._reader.start()
        return session

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output.extend(chunk)

    @property
    def text(self) -> str:
        return bytes(self.output).decode(errors="replace")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def hangup(self) -> None:
        """Close the terminal's master side: with ``controlling``, the kernel
        sends the app SIGHUP (an SSH drop)."""
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def close(self) -> None:
        """Kill the process if it still runs, then close the terminal once the
        drain thread has read the last bytes (it ends when the app's side of
        the terminal is gone)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=2)
        self.hangup()
