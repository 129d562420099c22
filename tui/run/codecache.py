"""What Python compiles anew at every start from the same text, kept across runs:
the methods ``@dataclass`` writes, the programs of regular expressions, the
``__new__`` of each ``namedtuple`` and the code of ``typing``'s forward
references.

``dataclasses`` makes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__setattr__`` ... by writing their source and ``exec``-ing it: the
compile is two thirds of a dataclass's cost, about 1 ms a class on this
2-core machine; a one-off ``probetop http URL`` makes ~20 of them, the
passive dashboard ~100 before its first frame (Textual's included). ``re``
parses each pattern and generates its program in Python: the dashboard
compiles ~95 (mostly Textual's CSS tokenizer) before its first frame,
~8 % of its CPU time (profiled, issue 28). The inputs are the same at every
start, so the results are kept, as Python keeps a module's bytecode in
``__pycache__``.

Contract:
- ``install(profile)``, before the classes and patterns are made:
  ``dataclasses``'s ``exec`` (its own global, which shadows the builtin in
  that module only) looks a source text up in the cache of ``profile``
  (one file per start-up path, so a one-off does not read the dashboard's)
  and compiles it on a miss exactly as ``exec`` would (``"<string>"``, no
  inherited ``__future__`` flags); so do ``collections``'s ``eval``
  (``namedtuple``: ~60 before the dashboard's first frame, Textual's and
  rich's) and ``typing``'s ``compile`` of a forward reference's string
  (~280), in ``eval`` mode (~9 ms of CPU together, issue 28). ``re``'s
  compiler gives a pattern's program (what ``_sre.compile`` takes) from
  the cache, and on a miss runs as always and keeps what it made. The
  same classes and patterns, the same tracebacks. The patterns' part is
  on only where ``re`` is built that way (CPython 3.11 to 3.13).
- ``save()``, when the process's classes are made: writes the cache if there
  was a miss (the file's entries and the new ones; only this run's when
  that passes ``MAX_ENTRIES``). Nothing is written under
  ``PYTHONDONTWRITEBYTECODE`` (``sys.dont_write_bytecode``).
- Where: ``$PYTHONPYCACHEPREFIX/probetop-startup`` when Python keeps its
  bytecode there, else ``$XDG_CACHE_HOME/probetop/startup`` or
  ``~/.cache/probetop/startup``; a file per Python build. The directory
  must be ours and private (0700, not a symlink) and the file ours and not
  writable by others, as for numba's cache (probes/core/native_cache.py):
  loading code someone else wrote would run it as us.
- Any failure (no usable directory, an unreadable, corrupt or foreign file,
  a full disk) leaves the cache out: everything compiles as before.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import marshal
import os
import re
import stat
import sys
import typing
from types import CodeType
from typing import Any

#: Beyond this many entries a save keeps only this run's (stale texts go).
MAX_ENTRIES = 4000

# A source text (str) -> its code; (pattern, flags) -> the pattern's program.
_codes: dict[Any, Any] = {}
_used: set[Any] = set()
_missed = False
_path: str | None = None


def _directory() -> str | None:
    prefix = sys.pycache_prefix
    if prefix:
        return os.path.join(prefix, "probetop-startup")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "probetop", "startup")
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return os.path.join(home, ".cache", "probetop", "startup")
    return None


def _private(st: os.stat_result) -> bool:
    """Ours and writable by no one else."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _entry(key: Any, value: Any) -> bool:
    """An entry of a kind this module writes."""
    if isinstance(key, str):
        return isinstance(value, CodeType)
    return isinstance(key, tuple) and isinstance(value, tuple) and len(value) == 5


def _load(path: str) -> dict[Any, Any]:
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
    return {k: v for k, v in loaded.items() if _entry(k, v)}


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


def _eval_code(source: str) -> CodeType:
    """The code ``compile(source, "<string>", "eval")`` gives in a module
    without ``__future__`` imports, from the cache (keyed apart from the
    ``exec`` texts)."""
    global _missed
    key = "\0eval\0" + source
    code = _codes.get(key)
    if code is None:
        code = _codes[key] = compile(source, "<string>", "eval", dont_inherit=True)
        _missed = True
    _used.add(key)
    return code


def _cached_eval(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
    """``eval`` for ``collections`` (``namedtuple`` evaluates its ``__new__``'s
    lambda): a source text's code from the cache. ``eval`` strips a string's
    leading blanks and ``compile`` does not: such a text is left to ``eval``."""
    if isinstance(source, str) and source[:1] not in (" ", "\t"):
        source = _eval_code(source)
    return builtins.eval(source, globals, locals)


def _cached_compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
    """``compile`` for ``typing`` (``ForwardRef`` compiles its string):
    the same call from the cache."""
    if (
        isinstance(source, str)
        and filename == "<string>"
        and mode == "eval"
        and not (args or kwargs)
    ):
        return _eval_code(source)
    return compile(source, filename, mode, *args, **kwargs)


class _RecordingSre:
    """``re``'s compiler's view of ``_sre``: ``compile`` notes the program
    it was given, keyed by the pattern object made (threads may compile at
    once); everything else is ``_sre``'s."""

    def __init__(self, sre: Any) -> None:
        self._sre = sre
        self.made: dict[int, tuple[Any, ...]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sre, name)

    def compile(self, pattern: Any, *program: Any) -> Any:
        made = self._sre.compile(pattern, *program)
        self.made[id(made)] = program
        return made


def _install_patterns() -> None:
    """``re``'s compiler served from the cache, where ``re`` is built as this expects."""
    compiler = getattr(re, "_compiler", None)
    if sys.version_info[:2] not in ((3, 11), (3, 12), (3, 13)) or compiler is None:
        return
    sre = compiler._sre
    recording = _RecordingSre(sre)
    compile_program = compiler.compile

    def cached_compile(p: Any, flags: Any = 0) -> Any:
        global _missed
        if not isinstance(p, (str, bytes)) or flags & re.DEBUG:
            made = compile_program(p, flags)  # a parsed pattern (re.Scanner), or debug output
            recording.made.pop(id(made), None)
            return made
        key = (p, int(flags))
        program = _codes.get(key)
        if program is not None:
            try:
                made = sre.compile(p, *program)
            except (TypeError, ValueError, RuntimeError):  # _sre refused it: compile anew
                del _codes[key]
            else:
                _used.add(key)
                return made
        made = compile_program(p, flags)
        program = recording.made.pop(id(made), None)
        if program is not None and len(program) == 5:  # re as this expects: else not kept
            flags_out, code, groups, groupindex, indexgroup = program
            # Plain ints: the opcodes are an int subclass, which marshal refuses.
            code = [int(word) for word in code]
            _codes[key] = (int(flags_out), code, int(groups), dict(groupindex), indexgroup)
            _used.add(key)
            _missed = True
        return made

    compiler._sre = recording
    compiler.compile = cached_compile


def install(profile: str) -> None:
    """Serve the compiles from ``profile``'s cache (see the module docstring)."""
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
    collections.eval = _cached_eval  # type: ignore[attr-defined]
    typing.compile = _cached_compile  # type: ignore[attr-defined]
    _install_patterns()


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
