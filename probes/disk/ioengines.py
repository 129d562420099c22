"""Which I/O engine a disk probe runs: fio's ``--ioengine`` names.

Contract:
- ``IOENGINES`` are the names ``--ioengine`` accepts, with fio's meaning:
  ``psync`` (pread/pwrite, one I/O in flight per job), ``libaio`` (Linux
  kernel AIO: io_submit/io_getevents) and ``io_uring``.
- ``check(requested, iodepth)`` refuses what cannot run (UsageProbeError):
  ``psync`` with ``--iodepth`` above 1 (fio would silently keep one I/O in
  flight; we say so instead).
- ``resolve(requested, iodepth)`` returns the engine to run and a note for
  the user, or raises ProbeError when the requested engine cannot work on
  this machine (io_uring disabled by sysctl or seccomp, an old kernel), with
  the reason and the alternative. No engine given: psync at iodepth 1, else
  libaio, the engine of the volume-initialisation command users already run
  (``fio --ioengine=libaio --iodepth=32``), so a default run stays comparable
  with it; io_uring is there to ask for.
"""

from __future__ import annotations

from probetop.probes.core.base import ProbeError, UsageProbeError

IOENGINES = ("psync", "libaio", "io_uring")


def check(requested: str | None, iodepth: int) -> None:
    """UsageProbeError for a combination that cannot mean what it says."""
    if requested is not None and requested not in IOENGINES:
        raise UsageProbeError(
            f"--ioengine must be one of {', '.join(IOENGINES)}, got {requested!r}"
        )
    if requested == "psync" and iodepth > 1:
        raise UsageProbeError(
            f"--ioengine psync is synchronous: it keeps one I/O in flight per job, so "
            f"--iodepth {iodepth} would mean nothing; use --iodepth 1, or --ioengine "
            "io_uring or libaio for a deeper queue"
        )


def resolve(requested: str | None, iodepth: int) -> tuple[str, str | None]:
    """(engine, note or None) for a probe about to start (see the contract)."""
    from probetop.probes.disk import uring

    check(requested, iodepth)
    if requested == "io_uring":
        why = uring.probe()
        if why is not None:
            raise ProbeError(f"--ioengine io_uring: {why}; use --ioengine libaio")
        return "io_uring", None
    if requested is not None:
        return requested, None
    return ("psync" if iodepth == 1 else "libaio"), None
