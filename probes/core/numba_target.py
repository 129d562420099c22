"""numba's CPU target loaded without scipy (the native I/O and ICMP loops).

Why: the first compile or cache load in a process fills numba's CPU target
(its lowering registries, ~250 modules). One of them, ``numba.np.arraymath``,
imports ``scipy.linalg`` when scipy is installed (numba's own import
loads only scipy's small top-level package), only to learn whether
``np.dot`` and ``np.linalg`` may be compiled: about 0.25 s of CPU (scipy's
array API layer, numpy.f2py, charset_normalizer), a quarter of the time a
loop takes to load from the cache, which every IOPS, warm-up and ICMP pane
waits for at start. None of probetop's loops uses BLAS.

Contract: ``load()`` (idempotent, thread-safe; the loops' modules call it
right after importing numba) fills the target with ``scipy.linalg``'s import
refused in the calling thread only, and only while it is not loaded yet: numba
then takes BLAS as absent (``np.dot`` in a jitted function would fail to
compile, which no loop here does, for the rest of the process); another
thread importing scipy.linalg meanwhile, and any import of it afterwards,
works as usual. Where numba's internals used here have moved (another
numba), it does nothing: numba then fills its target itself, scipy included.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: What numba imports to look for BLAS (``numba.np.linalg.ensure_blas``).
BLOCKED = "scipy.linalg"
_lock = threading.Lock()
_loaded = False


class _NoScipyHere(importlib.abc.MetaPathFinder):
    """Refuses ``scipy.linalg`` to one thread (the one filling the target)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if threading.get_ident() == self.thread and (
            fullname == BLOCKED or fullname.startswith(BLOCKED + ".")
        ):
            raise ModuleNotFoundError(f"No module named {fullname!r} (not needed)", name=fullname)
        return None


def load() -> None:
    """Fill numba's CPU target once, without scipy (module docstring)."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        try:
            from numba.core.compiler_lock import global_compiler_lock
            from numba.core.registry import cpu_target

            refresh = cpu_target.target_context.refresh
        except (ImportError, AttributeError):  # another numba: a speed-up lost, nothing more
            return
        finder = None if BLOCKED in sys.modules else _NoScipyHere()
        if finder is not None:
            sys.meta_path.insert(0, finder)
        try:
            with global_compiler_lock:  # as numba's own compiles take it around this
                refresh()
        finally:
            if finder is not None:
                sys.meta_path.remove(finder)
