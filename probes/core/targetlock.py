"""One run per target: a real lock, keyed by the target's identity.

Why: two warm-ups of the same device both ran, and an IOPS write could run
on a device another probetop was warming up. A lock file per target makes
the kernel enforce "one run per target" across processes and users; it dies
with its holder (also kill -9), so there is nothing to clean up.

Contract:
- ``TargetLock.for_target(path, command)`` names the keys a run on ``path``
  must hold; ``acquire()`` takes them all (``flock``, non-blocking) or
  raises ``TargetBusy`` naming the holder: "/dev/loop3 is in use by probetop
  PID 1234 (warmup /dev/loop3)". ``release()`` drops them; idempotent.
  ``check()`` takes and drops them at once: the probes' ``prepare`` reports
  a busy target before anything starts, ``run`` holds the lock from its
  first step (layout, I/O) to its end.
- Keys (one lock file each):
  - a block device: its device number (``st_rdev``), exclusive; a partition
    also takes its whole disk's number shared, a whole disk takes its own
    exclusive: a run on ``/dev/sdb`` and one on ``/dev/sdb1`` exclude each
    other, runs on two partitions do not. A loop device also takes its
    backing file's (or device's) keys: writing either writes the same bytes.
  - a regular file: its real path (so two runs creating the same new file
    exclude each other) and, once it exists, its device and inode numbers
    (hard links, bind mounts and symlinks are the same file).
  - a checkpoint file: its real path (``TargetLock.for_path``).
- Every run takes its keys, reads included: an IOPS read and a warm-up of
  the same target do not run together (each would measure the other).
- The holder writes "PID COMMAND TARGET" into its lock files, PID being
  "HOLDER,STARTED" in a split run (the child that holds the lock, then the
  waiter the user started: ``kernelholds.shown_pid``); a refused run names
  the one the user started while it lives, else the real holder (a waiter
  that exited while the kernel holds its run: said so), and checks the
  holder is alive (a stale line from a killed holder is not reported as a
  live one).
- Lock files do not pile up (one per target ever used, before): a holder
  removes its lock file when it releases it, while still holding it
  exclusively (a shared holder only when it can take it exclusively: no
  one else holds it); and each process, at its first ``acquire``, removes
  the files nobody holds any more (a holder killed with kill -9 or SIGKILL
  left them). A file is only ever removed under an exclusive lock, and a
  taker checks, once it holds the lock, that the file it locked is still
  the one the directory names (else it takes the new one), so a removal
  never lets two runs in. A taker refused by a file whose holder names no
  live process (a remover holding it for an instant) looks again briefly
  before it reports the target busy.
- Where: ``/run/lock/probetop`` (mode 1777 like /run/lock, shared by every
  user, so root and a user in the ``disk`` group see each other), else
  ``$XDG_RUNTIME_DIR/probetop``, else ``<tempdir>/probetop-<uid>/locks``.
  Lock files are opened with ``O_NOFOLLOW`` and must be plain files with one
  link: a symlink or hard link planted in the shared directory can never
  make probetop write somewhere else.
- Who may own them: the owner of a sticky directory may remove any file in
  it, and whoever owns the directory above a private one may move it away;
  either could take a held lock file from under its holder and let a second
  run in. So the shared directory must be root's or ours (root takes over
  one another user made: ``fchown`` to root on the directory itself, never
  through a link), and a private one and the directory it is in must be
  ours and writable by no one else; one that is not is passed over.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from probetop.probes.core import kernelholds
from probetop.probes.core.base import ProbeError, TargetProbeError

SHARED_DIR = Path("/run/lock/probetop")


class TargetBusy(TargetProbeError):
    """Another probetop holds the target (or checkpoint) this run needs;
    ``holder`` names it ("probetop PID 1234 (record s.jsonl)")."""

    code = "target-busy"
    holder = "another probetop"


@dataclass(frozen=True, slots=True)
class LockKey:
    """One lock file: ``name`` in the lock directory, taken shared or exclusive;
    ``label`` is what a refusal names."""

    name: str
    shared: bool
    label: str


def _path_key(path: str, label: str) -> LockKey:
    digest = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape"))
    return LockKey(f"path-{digest.hexdigest()[:32]}", False, label)


def _file_keys(path: str, label: str) -> list[LockKey]:
    keys = [_path_key(path, label)]
    try:
        st = os.stat(path)
    except OSError:
        return keys
    if stat.S_ISREG(st.st_mode):
        keys.append(LockKey(f"file-{st.st_dev}-{st.st_ino}", False, label))
    return keys


def _block_key(majmin: str, label: str, shared: bool = False) -> LockKey:
    return LockKey(f"blk-{majmin.replace(':', '-')}", shared, label)


@runtime_checkable
class UsesFiles(Protocol):
    """A probe that reads or writes files or devices (a target, a checkpoint).

    ``target_locks()`` are the locks it takes on them, settled by its
    ``prepare``: the host compares them with the files it writes itself
    (``clash``) before opening any of those."""

    def target_locks(self) -> Sequence[TargetLock]: ...


def clash(a: TargetLock, b: TargetLock) -> LockKey | None:
    """``b``'s key for a file or device ``a`` needs too (the same one by
    identity: real path, inode, device number), or None. Two shared keys
    (two partitions' common whole disk) are no clash."""
    mine = {key.name: key for key in a.keys}
    for key in b.keys:
        other = mine.get(key.name)
        if other is not None and not (other.shared and key.shared):
            return key
    return None


BlockDevices = Callable[[str], tuple[str, "str | None", "str | None"]]
"""For a block device path: (its MAJ:MIN, its whole disk's MAJ:MIN when it is
a partition, its loop backing file or device). The disk family passes its
sysfs reader; without one a device is keyed by its own number only."""


def target_keys(path: str, block_devices: BlockDevices | None = None) -> list[LockKey]:
    """The keys a run on ``path`` holds (see the module docstring)."""
    try:
        st = os.stat(path)
    except OSError:
        return _file_keys(path, path)  # a file this run creates
    if not stat.S_ISBLK(st.st_mode):
        return _file_keys(path, path)
    if block_devices is None:
        return [_block_key(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}", path)]
    dev, disk, backing = block_devices(path)
    keys = [_block_key(dev, path)]
    if disk is not None:
        keys.append(_block_key(disk, path, shared=True))
    if backing and backing.startswith("/") and not backing.endswith(" (deleted)"):
        with contextlib.suppress(OSError, TargetProbeError):
            if stat.S_ISBLK(os.stat(backing).st_mode):
                keys.append(_block_key(block_devices(backing)[0], path))
            else:
                keys += _file_keys(backing, path)
    return keys


def holder(path: str) -> str | None:
    """Who holds ``path`` now ("probetop PID 1234 (record s.jsonl)"), or None.

    A look that takes, writes and creates nothing: each key's lock file, if
    it exists, is tried shared and let go at once (a reader asking whether a
    recording is still being written must never stand in a writer's way for
    longer than that)."""
    try:
        directory = lock_dir()
    except ProbeError:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    for key in target_keys(path):
        lock_file = directory / f"{key.name}.lock"
        for _ in range(10):  # a file removed as we looked: look at its successor
            try:
                fd = os.open(lock_file, flags)
            except OSError:
                break  # no lock file: no holder
            try:
                outcome = _lock_or_holder(fd, lock_file, fcntl.LOCK_SH)
                if outcome.locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                elif not outcome.removed and not key.shared:
                    return _describe(outcome.line)
            finally:
                os.close(fd)
            if not outcome.removed:
                break
    return None


def lock_dir() -> Path:
    """The directory lock files live in (created if needed); TargetProbeError if none."""
    for candidate, shared in _candidates():
        if _usable_dir(candidate, shared):
            return candidate
    raise TargetProbeError(
        "cannot lock the target: no usable lock directory ("
        + ", ".join(str(c) for c, _ in _candidates())
        + "); create /run/lock/probetop (mode 1777) or set XDG_RUNTIME_DIR"
    )


def _candidates() -> list[tuple[Path, bool]]:
    out = [(SHARED_DIR, True)]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        out.append((Path(runtime) / "probetop", False))
    out.append((Path(tempfile.gettempdir()) / f"probetop-{os.geteuid()}" / "locks", False))
    return out


def _private(st: os.stat_result) -> bool:
    """A directory that is ours and writable by no one else."""
    writable_by_others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not writable_by_others


def _take_over(path: Path) -> os.stat_result | None:
    """Root: make the shared directory root's (another user made it, and as
    its owner could remove the lock files of anyone's runs). The directory
    itself, opened without following a link; its new status, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        os.fchown(fd, 0, 0)
        os.fchmod(fd, 0o1777)
        return os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def _usable_dir(path: Path, shared: bool) -> bool:
    """A directory we may keep lock files in: the shared one is sticky,
    world-writable (like /run/lock) and root's or ours, or ours and private;
    a private one is ours, mode 0700, in a directory that is ours and
    private too (see "Who may own them" in the module docstring)."""
    try:
        if shared:
            if not path.parent.is_dir():
                return False
            try:
                path.mkdir(mode=0o1777)
                os.chmod(path, 0o1777)  # mkdir's mode is cut by the umask
            except FileExistsError:
                pass
        else:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _private(os.lstat(path.parent)):
                return False
            path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if shared:
        if st.st_uid not in (0, os.geteuid()) and os.geteuid() == 0:
            st = _take_over(path) or st
        sticky_world = st.st_mode & (stat.S_ISVTX | stat.S_IWOTH) == stat.S_ISVTX | stat.S_IWOTH
        if not ((sticky_world and st.st_uid in (0, os.geteuid())) or _private(st)):
            return False
    elif not _private(st):
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _open_lock_file(path: Path) -> tuple[int, bool]:
    """(fd, writable) of a lock file, created if missing; never follows a
    symlink, never opens anything but a plain file with one link."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fd = -1
    writable = True
    for _ in range(10):  # removed and created again by others meanwhile: again
        try:
            fd = os.open(path, flags | os.O_RDWR)
            break
        except FileNotFoundError:
            try:
                fd = os.open(path, flags | os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
                with contextlib.suppress(OSError):
                    os.fchmod(fd, 0o666)  # other users' runs write their PID too
                break
            except FileExistsError:
                continue
        except PermissionError:
            fd = os.open(path, flags | os.O_RDONLY)  # we can lock it, not label it
            writable = False
            break
    if fd < 0:
        raise OSError(errno.EAGAIN, f"cannot open lock file {path}")
    st = os.fstat(fd)
    # No link left (0) is a file its holder removed as we opened it: the
    # caller sees it is no longer the one in the directory and opens anew.
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        raise OSError(errno.EPERM, f"{path} is not a plain lock file (link or special file)")
    return fd, writable


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pids(token: str) -> tuple[int, int] | None:
    """A lock line's first word: "HOLDER" or "HOLDER,STARTED" (a split run:
    the process holding the lock, then the one the user started), as
    (holder, started); None if it is neither."""
    parts = token.split(",")
    if len(parts) > 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[-1])


def _holder_line(fd: int) -> str | None:
    """ "PID[,PID] COMMAND TARGET" from a lock file whose holder is alive, else None."""
    for _ in range(5):  # the holder writes its line right after taking the lock
        try:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        except OSError:
            return None
        if text:
            pids = _pids(text.partition(" ")[0])
            if pids is not None and _alive(pids[0]):
                return text
            return None
        time.sleep(0.02)
    return None


def _describe(line: str | None) -> str:
    """The holder as the user knows it: the process they started while it
    lives (a split run's waiter passes signals on); once it has exited, the
    process that really holds the lock, and whether only the kernel keeps
    it (a run ended whose I/O a device that stopped answering holds)."""
    pids = None if line is None else _pids(line.partition(" ")[0])
    if line is None or pids is None:
        return "another probetop"
    rest = line.partition(" ")[2].strip()
    holder, started = pids
    pid = started if started != holder and _alive(started) else holder
    mine = " (this process)" if pid in (os.getpid(), kernelholds.shown_pid()) else ""
    said = f"probetop PID {pid}{mine}" + (f" ({rest})" if rest else "")
    if pid == holder and holder != os.getpid():
        state = kernelholds.process_state(holder)
        if state.ended or state.dying:
            said += (
                ", a run that has ended and that the kernel holds until its I/O "
                "completes or fails (the device answers or is removed)"
            )
    return said


def _pid_word() -> str:
    """This process, and the one the user started when that is another."""
    holder, started = os.getpid(), kernelholds.shown_pid()
    return str(holder) if started == holder else f"{holder},{started}"


_SETTLE_S = 0.2  # how long a refused taker looks again when no live holder is named
_SWEPT: set[Path] = set()  # lock directories this process has swept
_NAME = re.compile(r"(path|file|blk)-[0-9a-f-]+\.lock")


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a non-blocking ``flock`` came to: ``locked``; or the file was
    ``removed`` from the directory meanwhile (take the new one); or refused,
    with the holder's line ("PID COMMAND TARGET", None if unknown)."""

    locked: bool = False
    removed: bool = False
    line: str | None = None


def _lock_or_holder(fd: int, path: Path, how: int) -> _Outcome:
    """Take ``how`` (flock) on ``fd`` without blocking. A refusal counts
    only once it has lasted: a run that releases a lock file, or a process
    removing one nobody holds (``_sweep_once``), holds it for microseconds
    and then removes it (``removed``: take the new one). So a refusal that
    names a live holder is looked at once more after 10 ms; one that names
    no live process (a holder between its lock and its line, a remover),
    for up to ``_SETTLE_S``."""
    deadline = time.monotonic() + _SETTLE_S
    named = False
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return _Outcome(locked=True)
        except OSError:
            pass
        if not _same_file(fd, path):
            return _Outcome(removed=True)
        line = _holder_line(fd)
        if (line is not None and named) or time.monotonic() >= deadline:
            return _Outcome(line=line)
        named = line is not None
        time.sleep(0.01)


def _remove_if_ours(fd: int, path: Path, *, upgrade: bool) -> bool:
    """Remove ``path`` if it still names ``fd``'s file and ``fd`` holds it
    exclusively (``upgrade``: take it exclusively first, without waiting; a
    refusal means someone else holds it, and it stays). True if removed."""
    if upgrade:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
    if not _same_file(fd, path):
        return False
    try:
        os.unlink(path)
    except OSError:  # another user's file in the shared directory: theirs to remove
        return False
    return True


def _sweep_once(directory: Path) -> None:
    """Remove the lock files in ``directory`` no one holds (left by holders
    that were killed), once per process and directory. Only plain files
    with probetop's names; each under an exclusive lock (``_remove_if_ours``)."""
    if directory in _SWEPT:
        return
    _SWEPT.add(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for name in names:
        if not _NAME.fullmatch(name):
            continue
        path = directory / name
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                continue
            fd = os.open(path, flags)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _remove_if_ours(fd, path, upgrade=False)
        except OSError:
            pass  # held: a live run's
        finally:
            os.close(fd)


class TargetLock:
    """The lock files of one run. See the module docstring."""

    def __init__(self, keys: list[LockKey], owner: str) -> None:
        self.keys = keys
        self.owner = owner  # "COMMAND TARGET", written after the PID
        self._held: dict[str, int] = {}
        self._paths: dict[str, tuple[Path, bool]] = {}

    @classmethod
    def for_target(
        cls, path: str, command: str, block_devices: BlockDevices | None = None
    ) -> TargetLock:
        return cls(target_keys(path, block_devices), f"{command} {path}")

    @classmethod
    def for_path(cls, path: str, command: str, label: str) -> TargetLock:
        """A lock on a plain path (a checkpoint file), by its real path."""
        return cls([_path_key(path, label)], f"{command} {label}")

    @property
    def held(self) -> bool:
        return bool(self._held)

    def acquire(self) -> None:
        """Take every key, or none (TargetBusy / TargetProbeError)."""
        if self._held:
            return
        directory = lock_dir()
        _sweep_once(directory)
        try:
            for key in sorted(self.keys, key=lambda k: k.name):
                if key.name in self._held:
                    continue
                self._take(directory, key)
        except BaseException:
            self.release()
            raise

    def check(self) -> None:
        """Raise TargetBusy now if another run holds a key; holds nothing after
        (``prepare`` checks, ``run`` holds: a probe that never runs locks nothing)."""
        if self._held:
            return
        self.acquire()
        self.release()

    def add(self, keys: list[LockKey]) -> None:
        """Take more keys while holding the others (a file just created)."""
        directory = lock_dir()
        for key in keys:
            if key.name not in self._held:
                self._take(directory, key)
                self.keys.append(key)

    def _take(self, directory: Path, key: LockKey) -> None:
        path = directory / f"{key.name}.lock"
        for _ in range(10):
            try:
                fd, writable = _open_lock_file(path)
            except OSError as exc:
                raise TargetProbeError(
                    f"cannot lock {key.label}: {exc.strerror or exc} ({path})"
                ) from None
            how = fcntl.LOCK_SH if key.shared else fcntl.LOCK_EX
            outcome = _lock_or_holder(fd, path, how)
            if outcome.removed or (outcome.locked and not _same_file(fd, path)):
                os.close(fd)  # its holder removed it as we opened it: take the new one
                continue
            if not outcome.locked:
                holder = _describe(outcome.line)
                os.close(fd)
                busy = TargetBusy(
                    f"{key.label} is in use by {holder}: one run per target; "
                    "wait for it to end or stop it first"
                )
                busy.holder = holder
                raise busy from None
            break
        else:
            raise TargetProbeError(f"cannot lock {key.label}: {path} keeps changing")
        if writable:  # shared holders too: any live holder names the user
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                # A target named in bytes that are not UTF-8 (lone surrogates
                # here) was a UnicodeEncodeError traceback: written as \xNN.
                line = f"{_pid_word()} {self.owner}\n".encode("utf-8", "backslashreplace")
                os.pwrite(fd, line, 0)
        self._held[key.name] = fd
        self._paths[key.name] = (path, key.shared)

    def release(self) -> None:
        """Drop every key. Its lock file is removed first, while held
        exclusively (who opens it afterwards sees it gone and takes a new
        one), so the directory does not fill up with one file per target
        ever used; a shared key's file only when no one else holds it."""
        held, self._held = self._held, {}
        for name, fd in held.items():
            path, shared = self._paths.pop(name, (None, True))
            if path is not None:
                _remove_if_ours(fd, path, upgrade=shared)
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        # A stop signal's exception can land inside __init__ (a session
        # stopped while it starts): then there is nothing held to drop.
        if getattr(self, "_held", None):
            self.release()
