"""The methods ``@dataclass`` writes, compiled once per install, not at every start.

``dataclasses`` makes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__setattr__`` ... by writing their source and ``exec``-ing it: the
compile is two thirds of a dataclass's cost, about 1 ms a class on this
2-core machine, and a one-off ``probetop http URL`` makes ~20 of them
(profiled, issue 28). The text is the same at every start, so its code
object is kept, as Python keeps a module's bytecode in ``__pycache__``.

Contract:
- ``install(profile)``, before the classes are made: ``dataclasses``'s
  ``exec`` (its own global, which shadows the builtin in that module only)
  looks a source text up in the cache of ``profile`` (one file per start-up
  path, so a one-off does not read the dashboard's) and compiles it on a
  miss exactly as ``exec`` would (``"<string>"``, no inherited
  ``__future__`` flags): the same classes, the same tracebacks.
- ``save()``, when the process's classes are made: writes the cache if there
  was a miss (the file's entries and the new ones; only this run's when
  that passes ``MAX_ENTRIES``). Nothing is written under
  ``PYTHONDONTWRITEBYTECODE`` (``sys.dont_write_bytecode``).
- Where: ``$PYTHONPYCACHEPREFIX/probetop-dataclasses`` when Python keeps its
  bytecode there, else ``$XDG_CACHE_HOME/probetop/dataclasses`` or
  ``~/.cache/probetop/dataclasses``; a file per Python build. The directory
  must be ours and private (0700, not a symlink) and the file ours and not
  writable by others, as for numba's cache (probes/core/native_cache.py):
  loading code someone else wrote would run it as us.
- Any failure (no usable directory, an unreadable, corrupt or foreign file,
  a full disk) leaves the cache out: the classes compile as before.
"""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import stat
import sys
from types import CodeType
from typing import Any

#: Beyond this many entries a save keeps only this run's (stale texts go).
MAX_ENTRIES = 4000

_codes: dict[str, CodeType] = {}
_used: set[str] = set()
_missed = False
_path: str | None = None


def _directory() -> str | None:
    prefix = sys.pycache_prefix
    if prefix:
        return os.path.join(prefix, "probetop-dataclasses")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "probetop", "dataclasses")
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return os.path.join(home, ".cache", "probetop", "dataclasses")
    return None


def _private(st: os.stat_result) -> bool:
    """Ours and writable by no one else."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _load(path: str) -> dict[str, CodeType]:
    try:
        st = os.lstat(os.path.dirname(path))
        if not stat.S_ISDIR(st.st_mode) or not _private(st):
            return {}
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _private(st):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            loaded = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    finally:
        os.close(fd)
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}


def _cached_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """``exec`` for ``dataclasses``: a source text's code from the cache."""
    global _missed
    if isinstance(source, str):
        code = _codes.get(source)
        if code is None:
            # exec(str) in dataclasses.py compiles with its flags: none.
            code = _codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
            _missed = True
        _used.add(source)
        source = code
    builtins.exec(source, globals, locals)


def install(profile: str) -> None:
    """Serve ``dataclasses``'s compiles from ``profile``'s cache (see the module docstring)."""
    global _path
    if _path is not None:
        return
    directory = _directory()
    if directory is None:
        return
    build = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"
    _path = os.path.join(directory, f"{profile}-{build}.marshal")
    _codes.update(_load(_path))
    dataclasses.exec = _cached_exec  # type: ignore[attr-defined]


def save() -> None:
    """Write the cache when this run compiled something it lacked (errors ignored)."""
    global _missed
    if not _missed or _path is None or sys.dont_write_bytecode:
        return
    _missed = False
    keep = _codes if len(_codes) <= MAX_ENTRIES else {k: _codes[k] for k in _used}
    directory = os.path.dirname(_path)
    tmp = f"{_path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or not _private(st):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(keep))
        os.replace(tmp, _path)  # readers see the old file or the new one, whole
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
