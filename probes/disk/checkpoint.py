"""Resumable warm-up state: which byte extents of a pass are done, on which device.

A checkpoint is a small JSON file (mode 0600) holding the target's identity
(``blockdev.DeviceIdentity.as_dict()``), the pass ("read", "write", ...), the
block size, the byte range and the done extents as sorted, merged, half-open
``[start, end)`` pairs. ``save()`` is atomic (temp file in the same directory,
fsync, rename, fsync of the directory): after a crash or kill -9 the file is
either the previous or the new version, never a torn mix. ``matches()`` says
why a checkpoint must not be resumed on a target (another device, pass, block
size or range), so ``--resume`` never skips blocks of a different disk.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from probetop.probes.core.base import ProbeError

FORMAT = "probetop-warmup-checkpoint"
VERSION = 1
BLOCK_DEVICE_DIR = Path("/var/lib/probetop/warmup")
FILE_SUFFIX = ".probetop-warmup.json"


class CheckpointError(ProbeError):
    """A checkpoint file cannot be used (corrupt, foreign, newer format, unwritable)."""


class Checkpoint:
    """Done extents of one warm-up pass over ``[range_start, range_end)`` of a target."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        identity: Mapping[str, Any],
        pass_name: str,
        bs: int,
        total_bytes: int,
        range_start: int,
        range_end: int,
        done: Iterable[tuple[int, int]] = (),
    ) -> None:
        if not 0 <= range_start <= range_end:
            raise ValueError(f"bad range {range_start}-{range_end}")
        if bs <= 0:
            raise ValueError(f"bad block size {bs}")
        self.path = Path(path)
        self.identity = dict(identity)
        self.pass_name = pass_name
        self.bs = int(bs)
        self.total_bytes = int(total_bytes)
        self.range_start = int(range_start)
        self.range_end = int(range_end)
        # Parallel lists of extent starts and ends, kept sorted, disjoint and
        # non-adjacent, so a merge is a bisect plus a slice replacement.
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._lock_fd: int | None = None
        for start, end in done:
            self.mark_done(start, end)

    # ------------------------------------------------------------------ extents

    @property
    def done(self) -> list[tuple[int, int]]:
        """Sorted, merged, half-open done extents."""
        return list(zip(self._starts, self._ends, strict=True))

    @property
    def done_bytes(self) -> int:
        return sum(e - s for s, e in zip(self._starts, self._ends, strict=True))

    @property
    def complete(self) -> bool:
        return self.done_bytes == self.range_end - self.range_start

    def mark_done(self, start: int, end: int) -> None:
        """Record ``[start, end)`` as done, merging with overlapping or touching extents.

        Raises ValueError for an extent outside the checkpoint's range."""
        if end <= start:
            return
        if start < self.range_start or end > self.range_end:
            raise ValueError(
                f"extent {start}-{end} is outside the range {self.range_start}-{self.range_end}"
            )
        # First extent whose end reaches start (touching counts), last whose start <= end.
        lo = bisect.bisect_left(self._ends, start)
        hi = bisect.bisect_right(self._starts, end)
        if lo < hi:
            start = min(start, self._starts[lo])
            end = max(end, self._ends[hi - 1])
        self._starts[lo:hi] = [start]
        self._ends[lo:hi] = [end]

    def remaining(self) -> list[tuple[int, int]]:
        """The gaps still to do within the range, sorted."""
        gaps, cursor = [], self.range_start
        for s, e in zip(self._starts, self._ends, strict=True):
            if s > cursor:
                gaps.append((cursor, s))
            cursor = max(cursor, e)
        if cursor < self.range_end:
            gaps.append((cursor, self.range_end))
        return gaps

    # ------------------------------------------------------------------ matching

    def matches(
        self,
        identity: Mapping[str, Any],
        pass_name: str,
        bs: int,
        range_start: int,
        range_end: int,
    ) -> str | None:
        """None if this checkpoint may be resumed with these settings, else why not."""
        reason = identity_mismatch(self.identity, identity)
        if reason:
            return f"checkpoint {self.path} is for another target: {reason}"
        if pass_name != self.pass_name:
            return f"checkpoint {self.path} is for a {self.pass_name} pass, not {pass_name}"
        if int(bs) != self.bs:
            return f"checkpoint {self.path} was written with block size {self.bs}, not {bs}"
        if (int(range_start), int(range_end)) != (self.range_start, self.range_end):
            return (
                f"checkpoint {self.path} covers bytes {self.range_start}-{self.range_end}, "
                f"not {range_start}-{range_end}"
            )
        return None

    # ------------------------------------------------------------------ exclusivity

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def acquire_lock(self) -> None:
        """Take an exclusive advisory lock (flock on ``PATH.lock``) so two warm-ups
        of the same target cannot interleave their checkpoints. Held until
        ``release_lock()`` or process exit (also kill -9: the kernel drops it).
        Raises CheckpointError naming the holder's pid if another process has it."""
        if self._lock_fd is not None:
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise CheckpointError(
                f"cannot create lock {self.lock_path}: {exc.strerror}; "
                "give --checkpoint FILE somewhere writable"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise CheckpointError(
                f"another probetop (pid {holder}) is running this warm-up "
                f"(lock {self.lock_path}); wait for it or stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd
        # Holding the lock, no other save() can be under way: temp files left by
        # a killed writer are garbage now.
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()

    def release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the only descriptor drops the flock
            self._lock_fd = None

    # ------------------------------------------------------------------ persistence

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "identity": self.identity,
            "pass": self.pass_name,
            "bs": self.bs,
            "total_bytes": self.total_bytes,
            "range_start": self.range_start,
            "range_end": self.range_end,
            "done": [[s, e] for s, e in self.done],
            "done_bytes": self.done_bytes,
        }

    def save(self) -> None:
        """Write atomically: temp file beside the target path, fsync, rename, fsync dir.

        Raises CheckpointError (the previous checkpoint stays intact) on failure."""
        directory = self.path.parent
        payload = json.dumps(self.to_json(), separators=(",", ":")).encode()
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        except OSError as exc:
            raise CheckpointError(
                f"cannot write checkpoint in {directory}: {exc.strerror}; "
                "give --checkpoint FILE somewhere writable"
            ) from None
        try:
            try:
                view = memoryview(payload)
                while view:  # os.write may write less than asked (disk nearly full)
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)  # mkstemp made it 0600; the mode travels with it
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise CheckpointError(
                f"cannot write checkpoint {self.path}: {exc.strerror}; the previous one is intact"
            ) from None
        _fsync_dir(directory)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Checkpoint:
        """Read a checkpoint; CheckpointError says what is wrong and what to do."""
        p = Path(path)
        advice = f"delete {p} (or give another --checkpoint) to start the pass from scratch"
        try:
            text = p.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(f"no checkpoint at {p}: run without --resume first") from None
        except OSError as exc:
            raise CheckpointError(f"cannot read checkpoint {p}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"checkpoint {p} is corrupt ({exc}); {advice}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CheckpointError(f"{p} is not a probetop warm-up checkpoint; {advice}")
        version = data.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise CheckpointError(
                f"checkpoint {p} has format version {version!r}; this probetop reads "
                f"version {VERSION}: use the probetop that wrote it or {advice}"
            )
        try:
            checkpoint = cls(
                p,
                identity=_mapping(data["identity"]),
                pass_name=_str(data["pass"]),
                bs=_int(data["bs"]),
                total_bytes=_int(data["total_bytes"]),
                range_start=_int(data["range_start"]),
                range_end=_int(data["range_end"]),
            )
            previous_end = -1
            for pair in data["done"]:
                start, end = (_int(v) for v in pair)
                if start >= end or start <= previous_end:
                    raise ValueError(f"extent {start}-{end} out of order")
                previous_end = end
                checkpoint.mark_done(start, end)
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {p} is corrupt ({exc!s}); {advice}") from None
        return checkpoint


def identity_mismatch(saved: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Why two target identities are not the same device/file, or None.

    Serial, WWN and loop backing file must agree whenever either side knows
    them; size and kind always. Path and MAJ:MIN must agree unless a serial or
    WWN proves the identity (device names change across reboots).
    """
    for key in ("kind", "size_bytes"):
        if saved.get(key) != current.get(key):
            return f"{key} was {saved.get(key)!r}, now {current.get(key)!r}"
    strong = False
    for key in ("serial", "wwn", "backing_file"):
        a, b = saved.get(key), current.get(key)
        if a != b:
            return f"{key} was {a!r}, now {b!r}"
        strong = strong or (key != "backing_file" and a is not None)
    if not strong:
        for key in ("real_path", "dev"):
            if saved.get(key) != current.get(key):
                return f"{key} was {saved.get(key)!r}, now {current.get(key)!r}"
    return None


def default_path(target: str | os.PathLike[str] | Mapping[str, Any]) -> Path:
    """Where a target's checkpoint lives by default.

    A regular file: beside it (``FILE.probetop-warmup.json``). A block device:
    ``/var/lib/probetop/warmup/<name>-<serial or size>.json`` (a device node's
    directory, /dev, is a tmpfs that forgets on reboot). ``target`` is a path or
    an identity mapping (``DeviceIdentity.as_dict()``)."""
    if isinstance(target, Mapping):
        ident = dict(target)
    else:
        from probetop.probes.disk.blockdev import identify  # sysfs reads only; cheap

        ident = identify(target).as_dict()
    if ident.get("kind") == "file":
        real = Path(ident.get("real_path") or ident["path"])
        return real.with_name(real.name + FILE_SUFFIX)
    name = ident.get("name") or Path(ident.get("real_path") or ident["path"]).name
    tag = ident.get("serial") or ident.get("wwn") or f"{ident.get('size_bytes')}B"
    return BLOCK_DEVICE_DIR / f"{_safe(str(name))}-{_safe(str(tag))}.json"


# ---------------------------------------------------------------------- helpers


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "unnamed"


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; some filesystems refuse fsync on a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {value!r}")
    return value
