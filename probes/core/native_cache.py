"""Where numba keeps compiled native loops (disk I/O, ICMP): a per-user directory.

Why: numba caches compiled code (``cache=True``) beside the source file, or
in a user-wide directory under ``$HOME`` when the source tree is not
writable. A user whose home does not exist or is not writable (``nobody``,
service accounts, a read-only install) got ``RuntimeError: cannot cache
function ...: no locator available`` at import, a traceback instead of a run.

Contract:
- ``configure()`` picks the directory once per process, before numba loads
  (``probes/disk/native.py`` and ``probes/icmp/engine.py`` call it first)
  and sets ``NUMBA_CACHE_DIR``;
  when numba is already loaded (another family imported it first) it sets
  ``numba.core.config.CACHE_DIR`` too, which numba reads when it decorates.
- Candidates, first usable wins: ``$NUMBA_CACHE_DIR`` (the user's choice),
  ``$XDG_CACHE_HOME/probetop/numba`` (absolute paths only, as the XDG spec
  says), ``$HOME/.cache/probetop/numba``, ``<tempdir>/probetop-<uid>/numba``.
- Usable means: created if missing (mode 0700), a real directory (not a
  symlink), owned by the effective user, not writable by group or others,
  and writable by us. numba's index files are pickles: a directory someone
  else can write would let them run code as us (as root under ``sudo -E``,
  ``$HOME`` may still be the invoking user's: rejected by the owner check).
- When no candidate is usable, caching is off: ``enabled()`` is False, the
  loops compile in memory at every run (seconds slower, same results), and
  ``note()`` says why; nothing fails.

Pruning: numba keeps one entry (``<dir name>_<sha1 of the source
directory>``) per source path ever used and never removes one: every clean
clone, venv or tree copied to /tmp added ~1 MB that outlived it.
- ``claim(source_file)`` (each module with cached loops, before numba
  decorates): its entry gets a marker file, ``probetop-source``, holding the
  source directory, touched at each claim (its mtime is the entry's last
  use); the process keeps a shared lock on the entry directory for its life.
- ``prune()`` (``probetop compile``, and ``claim`` when it made a new entry)
  removes an entry whose source directory no longer exists or that nobody
  used for ``KEEP_UNUSED_DAYS``, only with an exclusive lock on it (a
  running probetop holds a shared one: its entry stays), only direct
  children of the chosen directory named as numba names them, real
  directories owned by us. An entry from before markers is traced to its
  source by the path numba compiled into it, accepted only when its SHA-1
  is the one in the entry's name; otherwise age alone decides.
- One prune at a time per directory (a lock file, ``PRUNE_LOCK``); a prune
  never raises ``OSError`` (``claim`` must not fail a run for it), and so
  never fails another process's compile or first run. The kept object code
  (``objects/``, ``native_objects``) is pruned by the same rules in the same
  pass.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

_lock = threading.Lock()
_chosen: str | None = None
_configured = False
_note: str | None = None
_claims: dict[str, int] = {}  # entry directory -> its fd, locked shared for our life

MARKER = "probetop-source"
KEEP_UNUSED_DAYS = 30
# numba's UserProvidedCacheLocator: "<last component>_<sha1 of the directory>".
_ENTRY = re.compile(r"(?P<base>.+)_(?P<sha>[0-9a-f]{40})")
# Where numba's compiled code names its source (legacy entries, no marker).
_SOURCE_IN_CODE = re.compile(rb"# File: (/[^\x00-\x1f]+?\.py)\b")


def _usable(path: str) -> bool:
    """Create ``path`` (0700) if missing; True if it is a private, writable directory."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    return os.access(path, os.W_OK | os.X_OK)


def candidates() -> list[str]:
    """The directories tried, in order (see the module docstring)."""
    given = os.environ.get("NUMBA_CACHE_DIR")
    return ([given] if given else []) + _own_candidates()


def _own_candidates() -> list[str]:
    """The directories that are probetop's alone (not a ``NUMBA_CACHE_DIR``
    the user may share with other numba programs)."""
    out = []
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        out.append(os.path.join(xdg, "probetop", "numba"))
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        out.append(os.path.join(home, ".cache", "probetop", "numba"))
    out.append(os.path.join(tempfile.gettempdir(), f"probetop-{os.geteuid()}", "numba"))
    return out


def configure() -> str | None:
    """Choose the cache directory (once); return it, or None when caching is off."""
    global _chosen, _configured, _note
    with _lock:
        if _configured:
            return _chosen
        tried = candidates()
        for path in tried:
            # The tempdir candidate's parent must be private too: check it first.
            parent = os.path.dirname(path)
            if path == tried[-1] and not _usable(parent):
                continue
            if _usable(path):
                _chosen = path
                break
        if _chosen is None:
            _note = (
                "numba's on-disk cache is off (no private writable directory among "
                f"{', '.join(tried)}): the I/O loops compile at every run"
            )
        else:
            os.environ["NUMBA_CACHE_DIR"] = _chosen
            numba = sys.modules.get("numba")
            if numba is not None:  # loaded already: numba reads config.CACHE_DIR per function
                numba.core.config.CACHE_DIR = _chosen
        _configured = True
        return _chosen


def enabled() -> bool:
    """Whether the compiled loops may be cached on disk (``configure()`` first)."""
    configure()
    return _chosen is not None


def note() -> str | None:
    """Why caching is off, or None."""
    configure()
    return _note


def entry_name(source_dir: str) -> str:
    """numba's entry (a subdirectory of the cache) for code from ``source_dir``,
    as its UserProvidedCacheLocator names it."""
    source_dir = os.path.abspath(source_dir)
    digest = hashlib.sha1(source_dir.encode()).hexdigest()
    return f"{os.path.basename(source_dir)}_{digest}"


def claim(source_file: str) -> None:
    """Mark the cache entry of ``source_file``'s directory as used by this
    process (shared lock held until exit, marker naming the source, mtime
    now); prune the others when the entry is new. Call after ``configure()``,
    before numba decorates; a failure only means no claim, never an error."""
    root = configure()
    if root is None:
        return
    source_dir = os.path.dirname(os.path.abspath(source_file))
    entry = os.path.join(root, entry_name(source_dir))
    with _lock:
        if entry in _claims:
            return
        created = not os.path.isdir(entry)
        fd = _lock_entry(entry, fcntl.LOCK_SH, make=True)
        if fd is None:
            return
        with contextlib.suppress(OSError):
            _write_marker(os.path.join(entry, MARKER), source_dir)
        _claims[entry] = fd
    if created:
        # Never an error for the run that claims: a prune that cannot finish
        # (a removal under way elsewhere, a full disk) leaves the rest for later.
        with contextlib.suppress(OSError):
            prune(wait=False)


def _lock_entry(entry: str, how: int, make: bool = False) -> int | None:
    """Open the entry directory and lock it (``how``, non-blocking): its fd,
    or None when another process holds a conflicting lock for ~2 s, or on an
    OS error. Retries when the entry was pruned between open and lock."""
    deadline = time.monotonic() + 2.0
    while True:
        try:
            if make:
                os.makedirs(entry, mode=0o700, exist_ok=True)
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino == os.lstat(entry).st_ino:
                return fd  # still the entry: not pruned meanwhile
        except OSError:
            if how == fcntl.LOCK_EX or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.02)  # a prune holds it for the few ms a removal takes
        os.close(fd)


def _write_marker(path: str, source_dir: str) -> None:
    """The marker names the source directory; its mtime is the last use."""
    data = source_dir.encode() + b"\n"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        if os.pread(fd, len(data) + 1, 0) != data:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        os.utime(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class Pruned:
    """What ``prune()`` removed: entries and their bytes."""

    entries: int = 0
    bytes: int = 0


PRUNE_LOCK = ".probetop-prune.lock"


def prune(
    now: float | None = None, keep_days: float = KEEP_UNUSED_DAYS, wait: bool = True
) -> Pruned:
    """Remove stale entries (see the module docstring) from the chosen cache
    directory; entries in use, or not numba's, are left alone. In a
    ``NUMBA_CACHE_DIR`` of the user's own choosing (other numba programs may
    share it), only entries with our marker. Then the kept object code of
    gone or long-unused sources (``prune_objects``).

    One prune at a time per directory (an exclusive lock on ``PRUNE_LOCK``):
    two processes pruning at once both read an entry the first was removing
    (a clean clone's ``probetop compile`` building two families side by side
    failed with FileNotFoundError on a file of a stale entry). With
    ``wait=False`` (a run's ``claim``) nothing is done while another prunes;
    else this waits for it (a prune takes milliseconds). Never raises
    ``OSError``: what cannot be read or removed is left for a later prune."""
    root = configure()
    if root is None:
        return Pruned()
    try:
        lock = os.open(
            os.path.join(root, PRUNE_LOCK),
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        return Pruned()
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        os.close(lock)
        return Pruned()  # another process is pruning this directory now
    now = time.time() if now is None else now
    try:
        entries = _prune_entries(root, now, keep_days)
        objects = prune_objects(os.path.join(root, "objects"), now, keep_days)
        return Pruned(entries.entries + objects.entries, entries.bytes + objects.bytes)
    finally:
        os.close(lock)


def _prune_entries(root: str, now: float, keep_days: float) -> Pruned:
    shared = root not in _own_candidates()
    entries = total = 0
    try:
        names = os.listdir(root)
    except OSError:
        return Pruned()
    for name in names:
        entry = os.path.join(root, name)
        if _ENTRY.fullmatch(name) is None or entry in _claims or not _ours(entry):
            continue
        if shared and not os.path.exists(os.path.join(entry, MARKER)):
            continue
        try:
            if not _stale(entry, name, now, keep_days):
                continue
        except OSError:  # going away under us (numba's own tidying, a user's rm)
            continue
        fd = _lock_entry(entry, fcntl.LOCK_EX)
        if fd is None:
            continue  # a running probetop uses it
        try:
            if not _stale(entry, name, now, keep_days):
                continue  # used since we looked
            size = _size(entry)
            # Out of numba's sight in one step, then removed (symlink-safe).
            doomed = os.path.join(root, f".{name}.pruning-{os.getpid()}")
            os.rename(entry, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
            entries, total = entries + 1, total + size
        except OSError:
            continue
        finally:
            os.close(fd)
    return Pruned(entries, total)


def _ours(entry: str) -> bool:
    try:
        st = os.lstat(entry)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _stale(entry: str, name: str, now: float, keep_days: float) -> bool:
    """No source directory any more, or no use for ``keep_days``."""
    source = _source_of(entry, name)
    if source is not None and not os.path.isdir(source):
        return True
    return now - _last_use(entry) > keep_days * 86400


def _source_of(entry: str, name: str) -> str | None:
    """The source directory the entry caches: from its marker, else from the
    path numba compiled into its code; only a path whose SHA-1 is the one in
    the entry's name counts."""
    candidates: list[bytes] = []
    try:
        with open(os.path.join(entry, MARKER), "rb") as f:
            candidates.append(f.read(4096).strip())
    except OSError:
        pass
    if not any(candidates):
        code = sorted(
            (_file_size(p), p)
            for p in (os.path.join(entry, n) for n in _listdir(entry) if n.endswith(".nbc"))
        )
        if code:
            with contextlib.suppress(OSError), open(code[0][1], "rb") as f:
                candidates += [os.path.dirname(m) for m in _SOURCE_IN_CODE.findall(f.read(1 << 22))]
    for raw in candidates:
        with contextlib.suppress(UnicodeDecodeError):
            source = raw.decode()
            if source and entry_name(source) == name:
                return source
    return None


def _last_use(entry: str) -> float:
    """Newest mtime of the entry and its files (the marker's: the last claim)."""
    newest = 0.0
    for n in [".", *_listdir(entry)]:
        with contextlib.suppress(OSError):
            newest = max(newest, os.lstat(os.path.join(entry, n)).st_mtime)
    return newest


def _file_size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 1 << 62  # gone meanwhile: last in line


def _size(entry: str) -> int:
    total = 0
    for n in _listdir(entry):
        with contextlib.suppress(OSError):
            total += os.lstat(os.path.join(entry, n)).st_size
    return total


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def lock_base(base: str, how: int, wait: bool = True) -> int:
    """A kept loop's ``<base>.lock`` (``native_objects``) opened and locked
    (``how``); its fd. Retried when the file was pruned between open and
    lock. ``OSError`` when ``wait`` is False and another process holds it."""
    while True:
        fd = os.open(base + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, how | (0 if wait else fcntl.LOCK_NB))
            if os.fstat(fd).st_ino == os.lstat(base + ".lock").st_ino:
                return fd
        except OSError:
            os.close(fd)
            if not wait:
                raise
            continue
        os.close(fd)


# -- prune ------------------------------------------------------------------------


def prune_objects(where: str, now: float, keep_days: float) -> Pruned:
    """Remove kept loops (``<base>.o``, ``.json``, ``.lock``) whose sources
    are gone or that no process loaded for ``keep_days`` (their .json's
    mtime: built, or last loaded), never one a running process holds (a
    shared lock on its .json: loaded); and leftovers of builds cut short (a
    ``.tmp``, a ``.o`` without its ``.json``) older than a day. Called by
    ``prune`` under its lock; never raises ``OSError``."""
    try:
        names = os.listdir(where)
    except OSError:
        return Pruned()
    entries = total = 0
    bases = {n[: -len(".json")] for n in names if n.endswith(".json")}
    for b in sorted(bases):
        base = os.path.join(where, b)
        try:
            if not _stale_object(base, now, keep_days):
                continue
            gone = _remove_object(base)
        except OSError:
            continue
        if gone:
            entries, total = entries + 1, total + gone
    for n in names:
        path = os.path.join(where, n)
        stem = n.rsplit(".", 1)[0]
        orphan = n.endswith(".tmp") or (n.endswith((".o", ".lock")) and stem not in bases)
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if orphan and now - st.st_mtime > 86400 and os.path.isfile(path):
                os.unlink(path)
                total += st.st_size
    return Pruned(entries, total)


def _stale_object(base: str, now: float, keep_days: float) -> bool:
    with open(base + ".json", "rb") as f:
        age = now - os.fstat(f.fileno()).st_mtime
        try:
            paths = json.load(f).get("paths")
        except (ValueError, AttributeError):
            paths = None
    if isinstance(paths, list) and any(
        not isinstance(p, str) or not os.path.exists(p) for p in paths
    ):
        return True
    return age > keep_days * 86400


def _remove_object(base: str) -> int:
    """Remove the kept loop at ``base`` unless a process holds it; its bytes (0: held)."""
    lock = lock_base(base, fcntl.LOCK_EX, wait=False)  # no build writing it
    try:
        fd = os.open(base + ".json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # a running process loaded it
        finally:
            os.close(fd)
        size = 0
        for suffix in (".json", ".o", ".lock"):
            with contextlib.suppress(OSError):
                size += os.lstat(base + suffix).st_size
                os.unlink(base + suffix)
        return size
    finally:
        os.close(lock)
