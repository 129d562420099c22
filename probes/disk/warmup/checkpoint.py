"""Resumable warm-up state: which byte extents of a pass are done, on which device.

A checkpoint is a small JSON file (mode 0600) that probetop owns and
recognises: it starts with ``{"format":"probetop-warmup-checkpoint"`` (the
magic), holds the target's identity (``blockdev.DeviceIdentity.as_dict()``),
the pass ("read", "write", ...), the block size, the byte range, the done
extents as sorted, merged, half-open ``[start, end)`` pairs, and a
``sha256`` of all that, so a damaged file is never trusted. Optional
``found`` (since probetop 0.2, same version 1: older readers ignore it and
its checksum still holds): what the pass found so far, ``{"zero": [[s, e],
...], "bad": [...]}`` (blocks read back all zero; blocks whose I/O failed).

- ``save()`` is atomic (``write_atomic``: temp file in the same directory,
  fsync, rename, fsync of the directory): after a crash or kill -9 the file
  is either the previous or the new version, never a torn mix. ``encode()``
  gives the bytes, so a background thread can write them.
- ``load()`` raises ``NotACheckpoint`` for anything that is not one (another
  file, a directory, a FIFO, a device: it is never read past a stat, and
  never overwritten) and ``CorruptCheckpoint`` for a probetop checkpoint
  that is damaged (bad JSON, bad checksum, extents out of order), with the
  way to start over.
- ``matches()`` says why a checkpoint must not be resumed on a target
  (another device, pass, block size or range), so ``--resume`` never skips
  blocks of a different disk.
- ``checkpoint_lock(path)`` / ``acquire_lock()``: one warm-up per checkpoint
  file (``lock.TargetLock`` on its real path); a second is refused naming
  the first one's PID. Nothing is created beside the checkpoint.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from probetop.probes.core.base import ProbeError
from probetop.probes.core.targetlock import TargetBusy, TargetLock

FORMAT = "probetop-warmup-checkpoint"
MAGIC = b'{"format":"' + FORMAT.encode() + b'"'
VERSION = 1
BLOCK_DEVICE_DIR = Path("/var/lib/probetop/warmup")
FILE_SUFFIX = ".probetop-warmup.json"
MAX_BYTES = 64 << 20  # a real checkpoint is a few KiB; never read more than this


class CheckpointError(ProbeError):
    """A checkpoint file cannot be used (corrupt, foreign, newer format, unwritable)."""


class NotACheckpoint(CheckpointError):
    """The path holds something else than a probetop checkpoint: never overwritten."""

    code = "not-a-checkpoint"


class CorruptCheckpoint(CheckpointError):
    """A probetop checkpoint that is damaged: never trusted, never silently replaced."""

    code = "corrupt-checkpoint"


def restart_advice(path: str | os.PathLike[str]) -> str:
    return (
        f"to start the pass from scratch, delete it (rm {path}) and run again without "
        "--resume, or give another --checkpoint"
    )


def checkpoint_lock(path: str | os.PathLike[str]) -> TargetLock:
    """The lock one warm-up holds on its checkpoint file (not yet acquired)."""
    return TargetLock.for_path(os.fspath(path), "warmup", f"checkpoint {path}")


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
        self._lock: TargetLock | None = None
        # What the pass found so far ("zero", "bad" -> extents); see the docstring.
        self.found: dict[str, list[tuple[int, int]]] = {}
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

    def acquire_lock(self) -> None:
        """Hold this checkpoint's lock (``checkpoint_lock``) so two warm-ups cannot
        interleave their saves. Held until ``release_lock()`` or process exit
        (also kill -9: the kernel drops it). Raises CheckpointError naming the
        holder's PID if another run has it."""
        if self._lock is not None and self._lock.held:
            return
        lock = checkpoint_lock(self.path)
        try:
            lock.acquire()
        except TargetBusy as exc:
            raise CheckpointError(str(exc)) from None
        self._lock = lock
        # Holding the lock, no other save() can be under way: temp files left by
        # a killed writer are garbage now.
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()

    def release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ------------------------------------------------------------------ persistence

    def to_json(self) -> dict[str, Any]:
        doc = {
            "format": FORMAT,  # first: the file's magic (MAGIC)
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
        found = {k: [[a, b] for a, b in v] for k, v in sorted(self.found.items()) if v}
        if found:
            doc["found"] = found
        doc["sha256"] = _checksum(doc)
        return doc

    def encode(self) -> bytes:
        """The file's bytes (what ``save`` writes)."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    def save(self) -> None:
        """Write atomically (``write_atomic``). Raises CheckpointError (the
        previous checkpoint stays intact) on failure."""
        write_atomic(self.path, self.encode())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Checkpoint:
        """Read a checkpoint; CheckpointError (NotACheckpoint, CorruptCheckpoint)
        says what is wrong and what to do."""
        p = Path(path)
        advice = restart_advice(p)
        text = _read_checkpoint_bytes(p)
        if not text.startswith(MAGIC) and FORMAT.encode() not in text[:4096]:
            raise NotACheckpoint(
                f"{p} is not a probetop warm-up checkpoint (no {FORMAT!r} header): probetop "
                "never overwrites it; give --checkpoint a new file name"
            )
        try:
            data = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptCheckpoint(f"checkpoint {p} is corrupt ({exc}); {advice}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CorruptCheckpoint(f"checkpoint {p} is corrupt (no format field); {advice}")
        version = data.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise CheckpointError(
                f"checkpoint {p} has format version {version!r}; this probetop reads "
                f"version {VERSION}: use the probetop that wrote it or {advice}"
            )
        saved_sum = data.pop("sha256", None)  # absent in files of older probetops
        if saved_sum is not None and saved_sum != _checksum(data):
            raise CorruptCheckpoint(
                f"checkpoint {p} is corrupt (its sha256 does not match its content: the done "
                f"extents cannot be trusted); {advice}"
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
            found = data.get("found") or {}
            for key, pairs in _mapping(found).items():
                checkpoint.found[_str(key)] = [
                    (_int(a), _int(b)) for a, b in (tuple(pair) for pair in pairs)
                ]
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptCheckpoint(f"checkpoint {p} is corrupt ({exc!s}); {advice}") from None
        return checkpoint


def _checksum(doc: Mapping[str, Any]) -> str:
    """sha256 of the document without its own checksum, keys sorted."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return hashlib.sha256(
        json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    ).hexdigest()


def _read_checkpoint_bytes(p: Path) -> bytes:
    """The file's bytes; only a regular file is ever opened (a FIFO would block,
    a device is not ours), and never more than MAX_BYTES."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {p}: run without --resume first") from None
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {p}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise NotACheckpoint(
            f"{p} is {kind}, not a probetop warm-up checkpoint: give --checkpoint a file name"
        )
    if st.st_size > MAX_BYTES:
        raise NotACheckpoint(
            f"{p} is {st.st_size:,} bytes: far too big for a probetop warm-up checkpoint; "
            "probetop never overwrites it; give --checkpoint a new file name"
        )
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {p}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotACheckpoint(f"{p} is not a regular file: not a probetop checkpoint")
        chunks, total = [], 0
        while total <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {p}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def write_atomic(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write ``payload`` to ``path`` atomically: temp file in the same
    directory, fsync, rename over ``path``, fsync of the directory. Raises
    CheckpointError on failure; whatever ``path`` held before stays intact."""
    target = Path(path)
    directory = target.parent
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
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
        os.replace(tmp, target)  # mkstemp made it 0600; the mode travels with it
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise CheckpointError(
            f"cannot write checkpoint {target}: {exc.strerror}; the previous one is intact"
        ) from None
    _fsync_dir(directory)


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
