"""The demo's scratch directory and its data files, laid out from the
process's start (issue 28: the first numbers sooner).

The IOPS and warm-up panes read files of 64 and 128 MiB of data the demo
creates. Made after the first frame, as each family's probes were, their
writes (and the syncs every 16 MiB) were on the chain before those panes'
first interval. Their writes need no interpreter lock for the time they
take (``os.pwrite`` and ``fdatasync`` release it), so here they start in a
thread of their own before Textual is imported, beside the dashboard's
start-up rather than after it. What is measured does not change: the same
files, the same sizes, the same data, and the probes' intervals start only
when the probes do.

Contract:
- ``Scratch(files)`` creates the directory (0700, ``probetop-demo-*`` in
  the temporary directory; removed before a hard exit too) and starts one
  daemon thread that lays out ``files`` (name -> bytes) in order, as
  ``filelayout.make_data_file`` does (data, synced), without importing the
  disk package (``_layout``).
- The thread runs at a nice value ``WRITER_NICE`` above the process's: it
  gives way to the dashboard's start-up when both want one core.
- ``data_file(name, size)``: the path once that file holds ``size`` bytes of
  data. The early thread leaves ``name`` from then on (it stops writing it
  within one 1 MiB write, or never starts it), and the caller writes what
  is still missing itself, at its own priority: the same file as one laid
  out whole. ``OSError`` (ENOSPC ...).
- ``close()`` (also run at a normal exit that comes first, and its removal
  at a hard exit) stops a layout under way (within one 1 MiB write), waits for
  the thread (bounded) and removes the directory. Idempotent.
- ``early_layouts()``: how many files the thread had laid out by now (tests).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from probetop.tui.run.hardexit import before_hard_exit

BLOCK = 1 << 20  # filelayout.LAYOUT_BLOCK
SYNC_EVERY = 16 << 20  # filelayout.LAYOUT_FLUSH_EVERY
#: How much nicer than the process the layout thread runs (never less nice).
WRITER_NICE = 10
#: How long ``close`` waits for the layout thread after stopping it.
CLOSE_WAIT_S = 5.0


class Scratch:
    """See the module docstring."""

    def __init__(self, files: Mapping[str, int]) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="probetop-demo-"))
        path = self.path
        # Also when a hung-up dashboard leaves with os._exit (tui/run/hardexit.py).
        self._unregister: Callable[[], None] = before_hard_exit(
            lambda: shutil.rmtree(path, ignore_errors=True)
        )
        # And at a normal exit that comes before ``close`` (a quit while the
        # demo's probes still join: the joining closes its stack only once the
        # makers are done, and the process does not wait for them).
        atexit.register(self._at_exit)
        self._files = dict(files)
        # A file a maker asked for (``data_file``): the early thread leaves it
        # (stops writing it, or never starts it) and the maker finishes it.
        self._claimed: set[str] = set()
        self._writing: str | None = None
        self._handed = {name: threading.Event() for name in self._files}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._laid_out = 0
        self._closed = False
        self._thread = threading.Thread(target=self._lay_out, name="demo-scratch", daemon=True)
        self._thread.start()

    def _layout(self, name: str, size: int, early: bool = False) -> bool:
        """Create or extend ``name`` to ``size`` bytes of data, as
        ``filelayout.Layout`` does (1 MiB writes of one random block, a sync
        every 16 MiB and at the end); False when stopped (``close``; for the
        ``early`` thread, also a maker's claim of ``name``). Not ``Layout`` itself:
        importing the disk package takes ~55 ms of the interpreter lock,
        which this thread would take from the dashboard's first frame."""
        fd = os.open(self.path / name, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            pos, unsynced = os.fstat(fd).st_size, 0
            if pos >= size:
                return True
            block = memoryview(os.urandom(BLOCK))
            while pos < size:
                if self._stop.is_set() or (early and name in self._claimed):
                    return False
                written = os.pwrite(fd, block[: min(BLOCK, size - pos)], pos)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                pos += written
                unsynced += written
                if unsynced >= SYNC_EVERY:
                    os.fdatasync(fd)
                    unsynced = 0
            os.fsync(fd)
            return True
        finally:
            os.close(fd)

    def _lay_out(self) -> None:
        # Behind the dashboard's start-up where both want one core (a loaded
        # machine): the writes' CPU (the kernel's copies into the page cache,
        # ~0.2 s for 192 MiB) is this thread's, and at the same nice it took
        # a share of the main thread's time to the first frame (measured: the
        # first frame later by about that at load 10). On an idle second core
        # it runs as fast. What a maker needs before this thread is done, the
        # maker finishes itself at the process's own priority (``data_file``).
        # (On Linux nice() moves the calling thread's own value only.)
        with contextlib.suppress(OSError):
            os.nice(WRITER_NICE)
        for name, size in self._files.items():
            with self._lock:
                if self._stop.is_set() or name in self._claimed:
                    continue
                self._writing = name
            try:
                if self._layout(name, size, early=True):
                    with self._lock:
                        self._laid_out += 1
            except OSError:
                pass  # the maker's own layout of it says what is wrong
            finally:
                with self._lock:
                    self._writing = None
                self._handed[name].set()

    def data_file(self, name: str, size: int) -> Path:
        """The path of ``name``, holding ``size`` bytes of data (module docstring)."""
        with self._lock:
            self._claimed.add(name)
            writing = self._writing == name
        if writing:
            self._handed[name].wait()  # stops within one 1 MiB write
        # Nothing to write when laid out early; stopped: the demo is ending.
        if self._closed or not self._layout(name, size):
            raise OSError(f"{self.path}: the demo's scratch directory was removed")
        return self.path / name

    def early_layouts(self) -> int:
        with self._lock:
            return self._laid_out

    def _at_exit(self) -> None:
        self._stop.set()
        shutil.rmtree(self.path, ignore_errors=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join(CLOSE_WAIT_S)
        for handed in self._handed.values():
            handed.set()  # a maker still waiting goes on, and finds the directory gone
        shutil.rmtree(self.path, ignore_errors=True)
        self._unregister()
        atexit.unregister(self._at_exit)
