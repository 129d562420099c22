"""The memory probe's blocks: what its operations touch, allocated as
sysbench 1.0.20's memory test allocates them.

Contract:
- ``Blocks.allocate(block_size, count, hugetlb=...)`` returns ``count``
  zeroed blocks of ``block_size`` bytes, every page touched before the clock
  starts, and ``addresses`` for the native loop; ``close()`` gives huge
  pages back to the pool (idempotent); ordinary blocks are unmapped when the
  ``Blocks`` is dropped.
- Without ``hugetlb``: page-aligned, process-private anonymous memory, as
  sysbench's ``posix_memalign(page)`` + ``memset`` (Python's default
  anonymous mmap is MAP_SHARED: shmem pages, which sysbench's heap is not).
- With ``hugetlb`` (``--memory-hugetlb``): a System V segment from the
  HugeTLB pool, as sysbench's ``hugetlb_alloc``: ``shmget(IPC_PRIVATE,
  size, SHM_HUGETLB | 0600)``, attached, and marked for removal at once, so
  the kernel frees it when the probe detaches it or the process ends, Ctrl-C
  and crashes included. ``size`` is sysbench's own rounding
  (``((block - 1) & ~4 MiB) + 4 MiB``), so the same runs find enough huge
  pages, or not, in both tools.
- A segment the pool cannot give raises ``HugeTlbUnavailable`` (exit 1, as
  sysbench) with sysbench's two FATAL lines and what to do about it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

from probetop.probes.core.base import ProbeError

# sysbench's LARGE_PAGE_SIZE (its configure default): the unit of its
# rounding, whatever this machine's huge page size (the kernel rounds the
# segment up to whole huge pages itself).
SYSBENCH_LARGE_PAGE = 4 << 20
IPC_PRIVATE = 0
IPC_CREAT = 0o1000
IPC_RMID = 0
SHM_HUGETLB = 0o4000
_SHMAT_FAILED = ctypes.c_void_p(-1).value


class HugeTlbUnavailable(ProbeError):
    """The HugeTLB pool cannot give a block (sysbench: FATAL, exit 1)."""

    code = "hugetlb"
    exit_code = 1


def sysbench_hugetlb_size(block_size: int) -> int:
    """The size sysbench 1.0.20's ``hugetlb_alloc`` asks ``shmget`` for."""
    return ((block_size - 1) & ~SYSBENCH_LARGE_PAGE) + SYSBENCH_LARGE_PAGE


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmget.restype = ctypes.c_int
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmat.restype = ctypes.c_void_p
    libc.shmdt.argtypes = [ctypes.c_void_p]
    libc.shmdt.restype = ctypes.c_int
    libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    libc.shmctl.restype = ctypes.c_int
    return libc


def _pool_hint() -> str:
    """What the HugeTLB pool holds now, and how to grow it."""
    free = total = "?"
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == "HugePages_Free":
                    free = value.strip()
                elif key == "HugePages_Total":
                    total = value.strip()
    except OSError:
        pass
    return (
        f"(--memory-hugetlb takes its blocks from the HugeTLB pool: {free} of {total} "
        "huge pages free; reserve more with `sysctl vm.nr_hugepages=N` as root)"
    )


class Blocks:
    """The blocks of one run. See the module docstring for the contract."""

    def __init__(self) -> None:
        self.addresses: list[int] = []
        self._maps: list[mmap.mmap] = []
        self._segments: list[int] = []  # shmat addresses to detach
        self._libc: ctypes.CDLL | None = None

    @classmethod
    def allocate(
        cls, block_size: int, count: int, *, hugetlb: bool = False, per_thread: bool = False
    ) -> Blocks:
        """``per_thread``: block i is thread i's (local scope), as sysbench's
        messages name it."""
        blocks = cls()
        try:
            for i in range(count):
                if hugetlb:
                    blocks._attach(block_size, thread=i if per_thread else None)
                else:
                    blocks._map(block_size)
        except BaseException:
            blocks.close()
            raise
        return blocks

    def _map(self, block_size: int) -> None:
        private = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        m = mmap.mmap(-1, block_size, flags=private)
        m.write(b"\0" * block_size)  # touch every page before the clock starts
        self._maps.append(m)
        self.addresses.append(ctypes.addressof(ctypes.c_char.from_buffer(m)))

    def _attach(self, block_size: int, *, thread: int | None) -> None:
        libc = self._libc = self._libc or _libc()
        size = sysbench_hugetlb_size(block_size)
        shmid = libc.shmget(IPC_PRIVATE, size, IPC_CREAT | SHM_HUGETLB | 0o600)
        if shmid < 0:
            err = ctypes.get_errno()
            which = "buffer!" if thread is None else f"buffer for thread #{thread}!"
            raise HugeTlbUnavailable(
                f"FATAL: Failed to allocate {size} bytes from HugeTLB memory. "
                f"errno = {err} ({os.strerror(err)})\n"
                f"FATAL: Failed to allocate {which}\n" + _pool_hint()
            )
        try:
            address = libc.shmat(shmid, None, 0)
            if address is None or address == _SHMAT_FAILED:
                err = ctypes.get_errno()
                raise HugeTlbUnavailable(
                    f"FATAL: Failed to attach shared memory segment, errno = {err} "
                    f"({os.strerror(err)})"
                )
        finally:
            libc.shmctl(shmid, IPC_RMID, None)  # freed once detached, whatever happens
        self._segments.append(address)
        ctypes.memset(address, 0, block_size)
        self.addresses.append(address)

    def close(self) -> None:
        """Give the huge pages back to the pool, which other programs wait on
        (call it only once no worker can touch them: a detached segment
        faults). Ordinary blocks stay mapped until the ``Blocks`` is dropped,
        with the probe."""
        if self._libc is not None:
            for address in self._segments:
                self._libc.shmdt(address)
        self._segments = []
