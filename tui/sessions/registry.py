"""Where detached sessions live and what state each one is in.

Contract:
- ``state_dir()``: ``$XDG_STATE_HOME/probetop`` (``~/.local/state/probetop``
  when unset), created 0700. It holds per session ``NAME.session.json`` (the
  metadata), ``NAME.jsonl`` (the recording, unless ``--record`` names another
  file) and ``NAME.log`` (the session's stdout and stderr: its report).
- ``runtime_dir()``: ``$XDG_RUNTIME_DIR/probetop`` (0700) when that variable
  names a directory, the state directory otherwise; it holds ``NAME.sock``.
- ``SessionInfo.state``: "running" while the recorded PID is alive and is the
  same process (its start time in ``/proc`` matches), "finished" once the
  session wrote its exit status, "died" when the process is gone without
  writing it (SIGKILL, OOM killer, power loss).
- Metadata files are replaced atomically (write, fsync, rename), mode 0600.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
META_SUFFIX = ".session.json"


class SessionError(Exception):
    """A session cannot be started, found or reached. The message is for the user."""

    exit_code = 2


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def state_dir() -> Path:
    """The directory of session metadata, recordings and logs (see above)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return _private_dir(Path(base) / "probetop")


def runtime_dir() -> Path:
    """The directory of control sockets (see above)."""
    run = os.environ.get("XDG_RUNTIME_DIR")
    if run and os.path.isdir(run):
        return _private_dir(Path(run) / "probetop")
    return state_dir()


def check_name(name: str) -> str:
    """``name`` if it can name files (letters, digits, ``.``, ``_``, ``-``)."""
    if not NAME_RE.match(name):
        raise SessionError(
            f"session name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def default_name(command: str | None, now: dt.datetime | None = None) -> str:
    """``COMMAND-YYYYMMDD-HHMMSS`` (``probetop-...`` for the passive panes)."""
    now = now or dt.datetime.now()
    return f"{command or 'probetop'}-{now:%Y%m%d-%H%M%S}"


def process_start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, ``/proc/PID/stat``
    field 22), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session's metadata file (``NAME.session.json``)."""

    name: str
    command: list[str]
    started_at: str
    pid: int
    start_ticks: int | None
    recording: str
    socket: str
    log: str
    ended_at: str | None = None
    exit_code: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        """The session's process is still this process (not a reused PID)."""
        ticks = process_start_ticks(self.pid)
        return ticks is not None and ticks == self.start_ticks

    @property
    def state(self) -> str:
        """ "running", "finished" or "died" (see the module docstring)."""
        if self.exit_code is not None:
            return "finished"
        return "running" if self.alive else "died"

    @property
    def recording_size(self) -> int:
        try:
            return os.stat(self.recording).st_size
        except OSError:
            return 0

    def finished(self, exit_code: int) -> SessionInfo:
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        return replace(self, ended_at=now, exit_code=exit_code)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def meta_path(name: str) -> Path:
    return state_dir() / f"{name}{META_SUFFIX}"


def write_info(info: SessionInfo) -> None:
    """Replace ``NAME.session.json`` atomically (mode 0600)."""
    path = meta_path(info.name)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(info.as_dict(), f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_info(path: Path) -> SessionInfo | None:
    """The metadata in ``path``, or None if it is unreadable or not one."""
    try:
        data = json.loads(path.read_text())
        return SessionInfo(**data)
    except (OSError, ValueError, TypeError):
        return None


def list_sessions() -> list[SessionInfo]:
    """Every session with a metadata file, oldest first."""
    found = []
    for path in state_dir().glob(f"*{META_SUFFIX}"):
        info = read_info(path)
        if info is not None:
            found.append(info)
    return sorted(found, key=lambda i: (i.started_at, i.name))


def find(name: str | None) -> SessionInfo:
    """The session called ``name``; with no name, the only running one.
    SessionError naming the candidates otherwise."""
    if name is not None:
        info = read_info(meta_path(check_name(name)))
        if info is None:
            raise SessionError(f"no session named {name!r} (`probetop ls` lists them)")
        return info
    live = [i for i in list_sessions() if i.state == "running"]
    if len(live) == 1:
        return live[0]
    if not live:
        raise SessionError("no running session (`probetop ls` lists them all)")
    names = ", ".join(i.name for i in live)
    raise SessionError(f"{len(live)} sessions are running ({names}): name one")


def session_paths(name: str, record: Path | None) -> tuple[Path, Path, Path]:
    """(recording, socket, log) of a new session called ``name``."""
    state = state_dir()
    recording = record if record is not None else state / f"{name}.jsonl"
    return recording.absolute(), runtime_dir() / f"{name}.sock", state / f"{name}.log"
