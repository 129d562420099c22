"""Where detached sessions live and what state each one is in.

Contract:
- ``state_dir()``: ``$XDG_STATE_HOME/probetop`` (``~/.local/state/probetop``
  when unset or relative, as the XDG spec says), created 0700. It holds per
  session ``NAME.session.json`` (the metadata), ``NAME.jsonl`` (the
  recording, unless ``--record`` names another file) and ``NAME.log`` (the
  session's stdout and stderr: its report).
- ``runtime_dir()``: ``$XDG_RUNTIME_DIR/probetop`` (0700) when that variable
  names a directory by an absolute path, the state directory otherwise; it holds ``NAME.sock``.
- ``SessionInfo.state``: "starting" from the name's claim until the session
  process says it is ready (its recording holds its header; ``starting`` is
  then rewritten False), "running" while the recorded PID is alive and is
  the same process (its start time in ``/proc`` matches), "finished" once
  the session wrote its exit status, "died" when the process is gone
  without writing it (SIGKILL, OOM killer, power loss). ``live`` is
  "starting" or "running": what ``stop``, ``follow`` and views wait on.
- Both directories must be private: owned by this user and writable by no
  one else (a symlink to such a directory is fine). Anything else is refused
  with a SessionError naming the owner and mode: another user who can write
  there could plant metadata that points ``stop`` at any process, or a
  socket that answers for a session.
- Metadata files are replaced atomically (write, fsync, rename), mode 0600;
  a session holds ``Reserve(name)`` from its start: disk space for its last
  write (its exit status), so a disk it filled cannot make a session that
  ended "died" (no status written) or hide its status from ``stop``;
  ``claim`` creates one only if the name is free (``link``: atomic, so two
  ``--detach --name X`` started together cannot both get X).
- ``read_info`` checks every field's type and that the file's name is the
  session's: a damaged file is a ``DamagedInfo`` (its path and why), never an
  exception later; ``ls`` reports it, ``find`` and ``--detach`` refuse the name.
- The command line is stored redacted (``redact_argv``): ``ls`` and
  ``ls --json`` show it, and it must not carry a URL's password or a token.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import stat
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from probetop.probes.core.planted import planted
from probetop.probes.record import redact_argv

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
META_SUFFIX = ".session.json"


class SessionError(Exception):
    """A session cannot be started, found or reached. The message is for the user."""

    exit_code = 2


def check_private(path: Path, *, create: bool = True) -> Path:
    """``path`` (created 0700 if missing and ``create``); SessionError unless
    it is a directory owned by this user that no one else can write, reached
    through no link another user planted in a shared directory (such a link
    to a private directory of ours passed: sessions were written and ``rm``
    deleted files there; ``probes.core.planted``)."""
    why = planted(path)
    if why is not None:
        raise SessionError(f"session directory {path}: {why}")
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path)  # through a symlink: the directory that is used
    except OSError as exc:
        raise SessionError(f"session directory {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SessionError(f"session directory {path} is not a directory")
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.geteuid() or mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SessionError(
            f"session directory {path} is not private (owner uid {st.st_uid}, mode "
            f"{mode:04o}; it must be yours and writable by no one else): "
            f"`chmod 700` it if it is yours, or set XDG_STATE_HOME / XDG_RUNTIME_DIR"
        )
    return path


def _state_path() -> Path:
    # The XDG spec: a relative path is invalid and ignored. Taken as is, it
    # named a different directory from every working directory, so `ls`,
    # `attach` and `stop` run elsewhere did not see the session.
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = str(Path.home() / ".local" / "state")
    return Path(base) / "probetop"


def _runtime_path() -> Path | None:
    run = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(run) and os.path.isdir(run):  # relative: ignored, as above
        return Path(run) / "probetop"
    return None


def session_dirs() -> tuple[Path, Path]:
    """(state directory, runtime directory), both checked private.

    The one check every session command goes through (``ls``, ``stop``,
    ``attach``, ``follow``, ``rm``, ``--detach``, ``d``): both directories at once,
    since ``ls`` reads only the state directory but what it lists leads
    ``stop`` to a socket in the runtime directory."""
    state = check_private(_state_path())
    run = _runtime_path()
    return state, (check_private(run) if run is not None else state)


def state_dir() -> Path:
    """The directory of session metadata, recordings and logs (see above);
    SessionError unless it and the runtime directory are private."""
    return session_dirs()[0]


def runtime_dir() -> Path:
    """The directory of control sockets (see above); SessionError unless it
    and the state directory are private."""
    return session_dirs()[1]


BODY_KEY_NAME = "body-hmac.key"
BODY_KEY_BYTES = 32


def body_key() -> bytes:
    """The per-install secret that keys request bodies' hashes
    (``redaction.body_digest``): ``BODY_KEY_NAME`` in the private state
    directory, 32 random bytes, mode 0600, made on first use (atomically:
    of two processes making it at once, both use the one that was linked
    first). OSError or SessionError when it cannot be had (an unsafe state
    directory, a read-only home); the caller then keeps lengths only."""
    path = state_dir() / BODY_KEY_NAME
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    tmp = _tmp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(BODY_KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        os.unlink(tmp)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise SessionError(f"{path} is not a private file of yours (mode 0600)")
        key = f.read(BODY_KEY_BYTES + 1)
    if len(key) != BODY_KEY_BYTES:
        raise SessionError(f"{path} does not hold a key of {BODY_KEY_BYTES} bytes")
    return key


def check_name(name: str) -> str:
    """``name`` if it can name files (letters, digits, ``.``, ``_``, ``-``)."""
    if not NAME_RE.match(name):
        raise SessionError(
            f"session name {name!r}: use 1 to 64 ASCII letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def default_name(command: str | None, now: dt.datetime | None = None) -> str:
    """``COMMAND-YYYYMMDD-HHMMSS`` (``probetop-...`` for the passive panes)."""
    now = now or dt.datetime.now()
    return f"{command or 'probetop'}-{now:%Y%m%d-%H%M%S}"


def process_start_ticks(pid: int, *, ended_too: bool = False) -> int | None:
    """The process's start time (clock ticks since boot, ``/proc/PID/stat``
    field 22), or None when there is no such process or it has exited: a
    zombie (state Z or X) keeps its /proc entry until its parent reaps it,
    which after a ``kill -9`` may take long or never come. ``ended_too``:
    a zombie's too (its main thread ended; the kernel may still hold
    others, ``tui.commands.ls``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    if not fields or (fields[0] in (b"Z", b"X", b"x") and not ended_too):
        return None
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
    starting: bool = False  # claimed, its process not yet ready (no header written)

    @property
    def alive(self) -> bool:
        """The session's process is still this process (not a reused PID)."""
        ticks = process_start_ticks(self.pid)
        return ticks is not None and ticks == self.start_ticks

    @property
    def state(self) -> str:
        """ "starting", "running", "finished" or "died" (see the module docstring)."""
        if self.exit_code is not None:
            return "finished"
        if not self.alive:
            return "died"
        return "starting" if self.starting else "running"

    @property
    def live(self) -> bool:
        """Its process is there and has not ended: starting or running."""
        return self.state in ("starting", "running")

    @property
    def recording_size(self) -> int:
        try:
            return os.stat(self.recording).st_size
        except OSError:
            return 0

    def finished(self, exit_code: int) -> SessionInfo:
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        return replace(self, ended_at=now, exit_code=exit_code, starting=False)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.starting:  # a ready session's file is what it was before the field
            del data["starting"]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> SessionInfo:
        """The metadata in ``data``; ValueError saying which field is wrong."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        unknown = set(data) - _FIELD_TYPES.keys()
        if unknown:
            raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
        for key, (kinds, required) in _FIELD_TYPES.items():
            if key not in data:
                if required:
                    raise ValueError(f"no {key!r}")
                continue
            value = data[key]
            if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
                raise ValueError(f"{key!r} is {type(value).__name__}")
        if not all(isinstance(a, str) for a in data["command"]):
            raise ValueError("'command' holds a non-string")
        if data["pid"] < 2:  # kill(-1) or kill(0) would reach far more than a session
            raise ValueError(f"'pid' {data['pid']} is not a session's process")
        if not NAME_RE.match(data["name"]):
            raise ValueError(f"'name' {data['name']!r} is not a session name")
        return cls(**data)


_STR, _INT, _NONE = (str,), (int,), (type(None),)
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    "name": (_STR, True),
    "command": ((list,), True),
    "started_at": (_STR, True),
    "pid": (_INT, True),
    "start_ticks": (_INT + _NONE, True),
    "recording": (_STR, True),
    "socket": (_STR, True),
    "log": (_STR, True),
    "ended_at": (_STR + _NONE, False),
    "exit_code": (_INT + _NONE, False),
    "extra": ((dict,), False),
    "starting": ((bool,), False),
}


@dataclass(frozen=True, slots=True)
class DamagedInfo:
    """A metadata file that cannot be read as one: where, and why."""

    path: Path
    why: str

    @property
    def name(self) -> str:
        return self.path.name[: -len(META_SUFFIX)]

    def error(self) -> SessionError:
        return SessionError(
            f"the metadata of session {self.name!r} is damaged ({self.path}: {self.why}); "
            "remove it (and its .jsonl/.log if unwanted) to reuse the name"
        )


def meta_path(name: str) -> Path:
    return state_dir() / f"{name}{META_SUFFIX}"


def _encode(info: SessionInfo) -> bytes:
    """The metadata file's bytes (the command redacted)."""
    data = {**info.as_dict(), "command": redact_argv(info.command)}
    return (json.dumps(data, indent=1) + "\n").encode()


def _tmp_path(path: Path) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # left by a crashed writer with our PID; O_EXCL / link below
    return tmp


def _write_tmp(info: SessionInfo) -> tuple[Path, Path]:
    """(the metadata's path, a new private temporary file beside it holding
    ``info``, synced)."""
    path = meta_path(info.name)
    tmp = _tmp_path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_encode(info))
            f.flush()
            os.fsync(f.fileno())
    except BaseException:  # a full disk: no half-written file left beside the metadata
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path, tmp


def write_info(info: SessionInfo) -> None:
    """Replace ``NAME.session.json`` atomically (mode 0600)."""
    path, tmp = _write_tmp(info)
    os.replace(tmp, path)


RESERVE_BYTES = 64 << 10
"""Disk space a session holds for its last metadata write (a few hundred
bytes; a long redacted command line fits too)."""


class Reserve:
    """Disk space held in the state directory for one later metadata write.

    Made at a session's start: an unnamed file (``O_TMPFILE``: nothing is
    left behind if the process is killed) with ``RESERVE_BYTES`` allocated.
    ``write(info)`` writes the metadata into those blocks, shrinks the file
    to it (which needs no space), names it and renames it over the metadata:
    the same atomic replace as ``write_info``, but one a full disk cannot
    refuse. Where the reserve could not be made (a filesystem without
    ``O_TMPFILE``, a disk already full) or the metadata outgrew it,
    ``write`` is ``write_info``. OSError as ``write_info``."""

    def __init__(self) -> None:
        self._fd: int | None = None
        try:
            fd = os.open(state_dir(), os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:
            os.close(fd)
            return
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def write(self, info: SessionInfo) -> None:
        """Replace ``NAME.session.json`` with ``info``, in the reserved space;
        the reserve is used up (later calls are ``write_info``)."""
        fd, self._fd = self._fd, None
        data = _encode(info)
        if fd is None or len(data) > RESERVE_BYTES:
            if fd is not None:
                os.close(fd)
            write_info(info)
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.pwrite(fd, view, len(data) - len(view)) :]
            os.ftruncate(fd, len(data))
            os.fsync(fd)
            path = meta_path(info.name)
            tmp = _tmp_path(path)
            _link_fd(fd, tmp)
            os.replace(tmp, path)
        except OSError:  # no /proc, an unusual filesystem: the ordinary write
            write_info(info)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Give the space back unused."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _link_fd(fd: int, path: Path) -> None:
    """Give the unnamed file open at ``fd`` the name ``path``."""
    # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N names an O_TMPFILE file
    # without CAP_DAC_READ_SEARCH (AT_EMPTY_PATH would need it). A src_dir_fd
    # makes os.link call linkat with that flag: plain link() would try to
    # link the /proc symlink itself (EXDEV).
    proc_fd = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(str(fd), path, src_dir_fd=proc_fd, follow_symlinks=True)
    finally:
        os.close(proc_fd)


def claim(info: SessionInfo) -> str | None:
    """Create ``NAME.session.json`` holding ``info`` if no file has that name
    (atomically: ``link`` fails if it exists); SessionError if taken or if
    it cannot be written (a full disk: nothing is started). A session of
    that name that has ended (finished or died) gives the name up: its
    files are kept under a name of their own (``archive``), returned."""
    archived = None
    for attempt in range(2):
        try:
            _link_new(info)
            return archived
        except FileExistsError:
            old = read_info(meta_path(info.name))
            if attempt == 0 and isinstance(old, SessionInfo) and not old.live:
                archived = archive(old)
                continue
            state = old.state if isinstance(old, SessionInfo) else "unreadable"
            raise SessionError(
                f"a session named {info.name!r} is {state} (`probetop ls`; its files are"
                f" in {state_dir()}): pick another --name"
                + (f", or `probetop stop {info.name}`" if state in ("starting", "running") else "")
            ) from None
    return archived


def _link_new(info: SessionInfo) -> None:
    try:
        path, tmp = _write_tmp(info)
    except OSError as exc:
        raise SessionError(
            f"cannot write {meta_path(info.name)}: {exc.strerror or exc}; nothing was started"
        ) from None
    try:
        os.link(tmp, path)
    finally:
        os.unlink(tmp)


def archive(info: SessionInfo) -> str:
    """Keep an ended session's files under a free name of their own,
    ``NAME-YYYYMMDD-HHMMSS`` (its start; ``-2``... if taken): its metadata,
    and its recording and log when they are the state directory's
    ``NAME.*`` files (a ``--record`` file elsewhere stays where it is).
    ``probetop ls`` lists it under that name. Returns the name."""
    stamp = re.sub(r"[^0-9]", "", info.started_at)[:14]
    base = f"{info.name[: 64 - 19]}-{stamp[:8]}-{stamp[8:14]}".rstrip("-")
    state = state_dir()
    for n in range(1, 100):
        name = base if n == 1 else f"{base[: 64 - 4]}-{n}"
        if not meta_path(name).exists():
            break
    else:
        raise SessionError(f"no free name to keep session {info.name!r} under; remove old ones")

    def move(path: str) -> str:
        old = Path(path)
        if old.parent != state or not old.name.startswith(f"{info.name}."):
            return path
        new = state / (name + old.name[len(info.name) :])
        with contextlib.suppress(FileNotFoundError):
            os.rename(old, new)
        return str(new)

    kept = replace(info, name=name, recording=move(info.recording), log=move(info.log))
    try:
        _link_new(kept)
    except FileExistsError:  # taken meanwhile: the next claim tries again
        raise SessionError(f"session {info.name!r} is being renamed by another command") from None
    meta_path(info.name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        Path(info.socket).unlink()  # an ended session's socket answers no one
    return name


def remove(info: SessionInfo) -> list[str]:
    """Delete an ended session: its metadata, and its recording and log when
    they are the state directory's ``NAME.*`` files (a ``--record`` file
    elsewhere is the user's: kept). Returns the paths removed. SessionError
    while it runs (stop it first) or when a file cannot be removed."""
    if info.live:
        raise SessionError(
            f"session {info.name} is {info.state} (PID {info.pid}): "
            f"`probetop stop {info.name}` first"
        )
    state = state_dir()
    removed = []
    for path in (info.recording, info.log):
        p = Path(path)
        if p.parent != state or not p.name.startswith(f"{info.name}."):
            continue
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SessionError(f"cannot remove {p}: {exc.strerror}") from None
        removed.append(str(p))
    with contextlib.suppress(OSError):
        Path(info.socket).unlink()
    try:
        meta_path(info.name).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise SessionError(f"cannot remove {meta_path(info.name)}: {exc.strerror}") from None
    removed.append(str(meta_path(info.name)))
    return removed


def read_info(path: Path) -> SessionInfo | DamagedInfo | None:
    """The metadata in ``path``; None if there is no such file; DamagedInfo
    if it is not readable as one (see the module docstring)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return DamagedInfo(path, exc.strerror or str(exc))
    try:
        info = SessionInfo.from_dict(json.loads(raw))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return DamagedInfo(path, str(exc).splitlines()[0][:200])
    if path.name != f"{info.name}{META_SUFFIX}":
        return DamagedInfo(path, f"it names session {info.name!r}")
    return info


def read_session(name: str) -> SessionInfo | None:
    """Session ``name``'s metadata, None if there is none; SessionError if damaged."""
    info = read_info(meta_path(name))
    if isinstance(info, DamagedInfo):
        raise info.error()
    return info


def scan_sessions() -> tuple[list[SessionInfo], list[DamagedInfo]]:
    """Every session with a metadata file, oldest first; and the damaged files."""
    found, damaged = [], []
    for path in sorted(state_dir().glob(f"*{META_SUFFIX}")):
        info = read_info(path)
        if isinstance(info, SessionInfo):
            found.append(info)
        elif info is not None:
            damaged.append(info)
    return sorted(found, key=lambda i: (i.started_at, i.name)), damaged


def list_sessions() -> list[SessionInfo]:
    """Every session with a readable metadata file, oldest first."""
    return scan_sessions()[0]


def find(name: str | None) -> SessionInfo:
    """The session called ``name``; with no name, the only running one.
    SessionError naming the candidates otherwise."""
    if name is not None:
        info = read_session(check_name(name))
        if info is None:
            raise SessionError(f"no session named {name!r} (`probetop ls` lists them)")
        return info
    live = [i for i in list_sessions() if i.live]
    if len(live) == 1:
        return live[0]
    if not live:
        raise SessionError("no running session (`probetop ls` lists them all)")
    names = ", ".join(i.name for i in live)
    raise SessionError(f"{len(live)} sessions are running ({names}): name one")


STARTED_TIMEOUT_S = 60.0
"""How long ``started`` waits (as `--detach` waits for "ready")."""


def started(info: SessionInfo, timeout_s: float = STARTED_TIMEOUT_S) -> SessionInfo:
    """``info`` once its session is past "starting" (its recording holds
    its header: a view or ``follow`` can open it). SessionError if it ended
    before it started (its metadata is removed) or is still starting after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while info.state == "starting":
        if time.monotonic() >= deadline:
            raise SessionError(
                f"session {info.name} is still starting after {timeout_s:g} s "
                f"(PID {info.pid}; its log: {info.log})"
            )
        time.sleep(0.05)
        now = read_session(info.name)
        if now is None:
            raise SessionError(f"session {info.name} ended before its probes started")
        info = now
    return info


def session_paths(name: str, record: Path | None) -> tuple[Path, Path, Path]:
    """(recording, socket, log) of a new session called ``name``."""
    state = state_dir()
    recording = record if record is not None else state / f"{name}.jsonl"
    return recording.absolute(), runtime_dir() / f"{name}.sock", state / f"{name}.log"
