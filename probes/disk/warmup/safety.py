"""Warm-up job: target and safety. Which bytes of which target, and may they
be written.

``check_target(settings)`` checks what the machine can hold
(``capacity.check``: threads, memory, kernel AIO), resolves the target
(probes/disk/target.py: kind, identity, the byte range, O_DIRECT or not)
and, for a pass that writes, applies in this order:

1. the refusals no flag overrides (``refusals.write_refusals``: mounted,
   held by LVM/RAID/dm, active swap, the device holding /; a file that
   backs a loop device or is an active swap file): ``ProbeError`` saying
   which mount or holder and what to do; checked before the target is
   opened (opening a device the system uses can fail first, with an errno
   such as EPERM that names none of it);
2. free space, for a file whose holes the pass fills (``check_room``);
3. the confirmation: without ``settings.confirmed`` it raises
   ``ConfirmationRequired`` carrying the target and the data signatures found
   on it (partition table, filesystem), which the dashboard's dialog lists.

Before those, for every pass: that no other probetop holds the target
(``lock.TargetLock.check``, named by PID; the probe holds the lock while it
runs).
"""

from __future__ import annotations

from probetop.probes.core.base import ConfirmationRequired, ProbeError
from probetop.probes.core.targetlock import TargetLock
from probetop.probes.disk import capacity
from probetop.probes.disk.freespace import allocation_needed, check_room
from probetop.probes.disk.refusals import lock_devices, refusal_message, write_refusals
from probetop.probes.disk.signatures import data_signatures
from probetop.probes.disk.target import Target, resolve
from probetop.probes.disk.warmup.settings import WarmupSettings

ACTION = "write pass"  # what the confirmation dialog says is about to happen


def check_target(settings: WarmupSettings) -> tuple[Target, TargetLock]:
    """The checked target of a warm-up and its (checked, not held) lock;
    raises ProbeError (or ConfirmationRequired) as the module docstring says."""
    path = settings.target
    capacity.check(jobs=settings.jobs, iodepth=settings.iodepth, bs=settings.bs)
    # Another probetop on this target is named by PID before anything about
    # the target itself (its size while the other run grows it, its O_EXCL,
    # which would show up below as "the kernel reports it busy").
    lock = TargetLock.for_target(path, "warmup", lock_devices)
    lock.check()
    # What holds a device (a mount, the root filesystem, a holder) is read
    # from the kernel's state before any open: opening a device the system
    # uses may fail first, with an errno that names none of it (EPERM).
    if settings.writes:
        refusals = write_refusals(path)
        if refusals:
            raise ProbeError(refusal_message(refusals))
    target = resolve(
        path,
        write=settings.writes,
        bs=settings.bs,
        offset=settings.range_start or 0,
        end=settings.range_end,
        direct=settings.direct,
    )
    assert target.identity is not None  # an existing target: identified
    if settings.writes:
        if target.kind == "file":
            need = allocation_needed(path, target.start, target.end)
            check_room(path, need, f"a {settings.pass_name} pass over")
        if not settings.confirmed:
            raise ConfirmationRequired(
                f"a {settings.pass_name} pass destroys every byte of {path}. "
                f"Confirm with --yes-destroy-data={path} (headless) or type "
                "the name in the dashboard's confirmation dialog.",
                target=path,
                action=ACTION,
                signatures=_signatures(path),
            )
    return target, lock


def _signatures(path: str) -> tuple[str, ...]:
    """What the dialog lists; a read error there must not hide the question."""
    try:
        return tuple(data_signatures(path))
    except ProbeError:
        return ()
