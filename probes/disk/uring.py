"""io_uring rings for the native I/O loop: set-up, mapping and tear-down.

Contract:
- ``Ring.open(entries)`` creates one ring through the raw ``io_uring_setup``
  system call (no liburing needed) and maps its submission queue, completion
  queue and SQE array. Call it in the thread that will submit: the ring is
  created ``SINGLE_ISSUER | DEFER_TASKRUN`` where the kernel has them (6.1+),
  which ties it to that thread and lets completions run only when the thread
  asks for them (cheaper; fio 3.33 sets them too, with ``CQSIZE`` and
  ``COOP_TASKRUN``: strace). Older kernels get a plain ring. Raises
  ``OSError`` with the kernel's reason (io_uring disabled by sysctl
  kernel.io_uring_disabled, seccomp in a container, ENOMEM for the
  locked-memory limit).
- ``Ring.layout`` is the int64 array ``native.uring_loop`` reads its word
  offsets from (``L_*`` below); ``sq32``, ``sqe64``, ``cq32``, ``cq64`` are
  numpy views of the shared memory the loop reads and writes.
- ``Ring.close()`` unmaps and closes; the worker calls it when its loop has
  returned (no I/O in flight then).
- ``probe()`` says once per process whether io_uring works here, and if not
  why (for ``--ioengine`` auto and for a clear refusal).

Memory ordering: the loop publishes the SQ tail and then enters the kernel,
and reads the CQ only after ``io_uring_enter`` with GETEVENTS returned; the
system call orders both sides, so no explicit barriers are needed in the
loop (x86-64 and aarch64, the two architectures with the syscall numbers).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import threading
from dataclasses import dataclass

import numpy as np

# io_uring_setup, io_uring_enter: the same numbers on every architecture
# since Linux 5.1 (the unified syscall table).
SYS_IO_URING_SETUP = 425
SYS_IO_URING_ENTER = 426
SUPPORTED_MACHINES = ("x86_64", "aarch64")

IORING_OFF_SQ_RING = 0
IORING_OFF_CQ_RING = 0x8000000
IORING_OFF_SQES = 0x10000000
IORING_FEAT_SINGLE_MMAP = 1 << 0
IORING_FEAT_EXT_ARG = 1 << 8
IORING_SETUP_CLAMP = 1 << 4
IORING_SETUP_SUBMIT_ALL = 1 << 7
IORING_SETUP_COOP_TASKRUN = 1 << 8
IORING_SETUP_SINGLE_ISSUER = 1 << 12
IORING_SETUP_DEFER_TASKRUN = 1 << 13
SQE_BYTES = 64
CQE_BYTES = 16

# Word offsets in Ring.layout, read by native.uring_loop.
(
    L_FD,
    L_SQ_HEAD,
    L_SQ_TAIL,
    L_SQ_MASK,
    L_SQ_ARRAY,
    L_CQ_HEAD,
    L_CQ_TAIL,
    L_CQ_MASK,
    L_CQES,
    L_EXT_ARG,
) = range(10)
N_LAYOUT = 10


class _SqOffsets(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("head", "tail", "ring_mask", "ring_entries", "flags", "dropped", "array")
    ] + [("resv1", ctypes.c_uint32), ("user_addr", ctypes.c_uint64)]


class _CqOffsets(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("head", "tail", "ring_mask", "ring_entries", "overflow", "cqes", "flags")
    ] + [("resv1", ctypes.c_uint32), ("user_addr", ctypes.c_uint64)]


class _Params(ctypes.Structure):
    _fields_ = [
        ("sq_entries", ctypes.c_uint32),
        ("cq_entries", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("sq_thread_cpu", ctypes.c_uint32),
        ("sq_thread_idle", ctypes.c_uint32),
        ("features", ctypes.c_uint32),
        ("wq_fd", ctypes.c_uint32),
        ("resv", ctypes.c_uint32 * 3),
        ("sq_off", _SqOffsets),
        ("cq_off", _CqOffsets),
    ]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _setup(entries: int, flags: int) -> tuple[int, _Params]:
    params = _Params()
    params.flags = flags
    fd = _libc.syscall(SYS_IO_URING_SETUP, ctypes.c_uint32(entries), ctypes.byref(params))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(fd), params


def _pages(n: int) -> int:
    return -(-n // mmap.PAGESIZE) * mmap.PAGESIZE


@dataclass
class Ring:
    """One mapped io_uring instance (see the module docstring)."""

    fd: int
    entries: int
    layout: np.ndarray
    sq32: np.ndarray
    sqe64: np.ndarray
    cq32: np.ndarray
    cq64: np.ndarray
    maps: list[mmap.mmap]
    flags: int

    @classmethod
    def open(cls, entries: int) -> Ring:
        """A ring with room for ``entries`` I/Os in flight (see the contract)."""
        if platform.machine() not in SUPPORTED_MACHINES:
            raise OSError(errno.ENOSYS, f"io_uring is not wired for {platform.machine()}")
        wanted = (
            IORING_SETUP_CLAMP
            | IORING_SETUP_SUBMIT_ALL
            | IORING_SETUP_SINGLE_ISSUER
            | IORING_SETUP_DEFER_TASKRUN
        )
        try:
            fd, params = _setup(entries, wanted)
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # EINVAL: a flag this kernel does not know
                raise
            fd, params = _setup(entries, IORING_SETUP_CLAMP)
        maps: list[mmap.mmap] = []
        try:
            sq_off, cq_off = params.sq_off, params.cq_off
            # Whole pages: the numpy views need a multiple of their item size.
            sq_bytes = _pages(sq_off.array + params.sq_entries * 4)
            cq_bytes = _pages(cq_off.cqes + params.cq_entries * CQE_BYTES)
            prot = mmap.PROT_READ | mmap.PROT_WRITE
            populate = getattr(mmap, "MAP_POPULATE", 0)
            single = bool(params.features & IORING_FEAT_SINGLE_MMAP)
            sq_map = mmap.mmap(
                fd,
                max(sq_bytes, cq_bytes) if single else sq_bytes,
                mmap.MAP_SHARED | populate,
                prot,
                offset=IORING_OFF_SQ_RING,
            )
            maps.append(sq_map)
            if single:
                cq_map = sq_map
            else:
                cq_map = mmap.mmap(
                    fd, cq_bytes, mmap.MAP_SHARED | populate, prot, offset=IORING_OFF_CQ_RING
                )
                maps.append(cq_map)
            sqe_map = mmap.mmap(
                fd,
                params.sq_entries * SQE_BYTES,
                mmap.MAP_SHARED | populate,
                prot,
                offset=IORING_OFF_SQES,
            )
            maps.append(sqe_map)
        except (OSError, ValueError) as exc:
            for m in maps:
                m.close()
            os.close(fd)
            if isinstance(exc, OSError):
                raise
            raise OSError(errno.EINVAL, f"cannot map the io_uring: {exc}") from None
        layout = np.zeros(N_LAYOUT, dtype=np.int64)
        layout[L_FD] = fd
        layout[L_SQ_HEAD] = sq_off.head // 4
        layout[L_SQ_TAIL] = sq_off.tail // 4
        layout[L_SQ_MASK] = sq_off.ring_mask // 4
        layout[L_SQ_ARRAY] = sq_off.array // 4
        layout[L_CQ_HEAD] = cq_off.head // 4
        layout[L_CQ_TAIL] = cq_off.tail // 4
        layout[L_CQ_MASK] = cq_off.ring_mask // 4
        layout[L_CQES] = cq_off.cqes // 8
        layout[L_EXT_ARG] = 1 if params.features & IORING_FEAT_EXT_ARG else 0
        return cls(
            fd=fd,
            entries=int(params.sq_entries),
            layout=layout,
            sq32=np.frombuffer(sq_map, dtype=np.uint32),
            sqe64=np.frombuffer(sqe_map, dtype=np.uint64),
            cq32=np.frombuffer(cq_map, dtype=np.uint32),
            cq64=np.frombuffer(cq_map, dtype=np.uint64),
            maps=maps,
            flags=int(params.flags),
        )

    def close(self) -> None:
        """Unmap and close (the loop must have returned)."""
        # Drop the numpy views first: mmap.close refuses while one is exported.
        self.sq32 = self.sqe64 = self.cq32 = self.cq64 = np.zeros(0, dtype=np.uint32)
        for m in self.maps:
            try:
                m.close()
            except BufferError:  # a view still alive: the GC unmaps it later
                pass
        self.maps.clear()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_PROBED: list[str | None] = []
_PROBE_LOCK = threading.Lock()


def probe() -> str | None:
    """None if io_uring rings can be created here, else why not (one line).
    Checked once per process."""
    with _PROBE_LOCK:
        if not _PROBED:
            _PROBED.append(_why_not())
        return _PROBED[0]


def _why_not() -> str | None:
    if platform.machine() not in SUPPORTED_MACHINES:
        return f"io_uring is not wired for {platform.machine()} here"
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            disabled = f.read().strip()
    except OSError:
        disabled = "0"
    if disabled == "2":
        return "io_uring is disabled on this machine (sysctl kernel.io_uring_disabled=2)"
    try:
        ring = Ring.open(2)
    except OSError as exc:
        if exc.errno == errno.EPERM:
            return (
                "io_uring is not permitted for this user (sysctl kernel.io_uring_disabled="
                f"{disabled}, or a seccomp policy)"
            )
        if exc.errno == errno.ENOSYS:
            return "this kernel has no io_uring (Linux 5.1+), or a seccomp policy hides it"
        return f"io_uring set-up failed: {exc.strerror or exc}"
    ring.close()
    return None
