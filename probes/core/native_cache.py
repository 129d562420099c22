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
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading

_lock = threading.Lock()
_chosen: str | None = None
_configured = False
_note: str | None = None


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
    out = []
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        out.append(given)
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
