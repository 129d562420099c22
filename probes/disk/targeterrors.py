"""An ``OSError`` met while working on a disk target, as one line for the user.

Contract: ``describe_os_error(exc)`` is the error's text with a hint of what
to do for the common errnos (permission, read-only, no space, busy ...);
``with target_errors(path, doing):`` turns any ``OSError`` inside into a
``TargetProbeError`` naming the path (never a traceback).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from probetop.probes.core.base import TargetProbeError

_HINTS = {
    errno.EACCES: "permission denied: run as root or give your user access to it",
    errno.EPERM: "operation not permitted: run as root or give your user access to it",
    errno.EROFS: "read-only filesystem or device",
    errno.ENOSPC: "no space left on the filesystem",
    errno.EDQUOT: "disk quota exceeded",
    errno.EBUSY: "busy: mounted, used as swap or claimed by another driver",
    errno.ENXIO: "no such device (detached or removed?)",
    errno.ENODEV: "no such device (detached or removed?)",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "file name too long",
    errno.ETXTBSY: "busy: a running program's file or an active swap file",
    errno.EIO: "I/O error: the device reported a failure",
    errno.EINVAL: "invalid argument (O_DIRECT alignment, or the filesystem refuses the request)",
}


def describe_os_error(exc: OSError) -> str:
    """A one-line reason for an OSError ("read-only filesystem or device").
    EPERM as root is no question of users: a policy forbids the open."""
    if exc.errno == errno.EPERM and os.geteuid() == 0:
        return (
            "operation not permitted, even for root: a policy forbids it here (a container's "
            "or cgroup's device rules, SELinux/AppArmor, kernel lockdown, or the kernel "
            "protecting a device in use)"
        )
    if exc.errno in _HINTS:
        return _HINTS[exc.errno]
    return exc.strerror or str(exc)


@contextlib.contextmanager
def target_errors(path: str, doing: str = "") -> Iterator[None]:
    """Turn an OSError into a TargetProbeError naming ``path`` (exit 2, one line)."""
    try:
        yield
    except OSError as exc:
        what = f" ({doing})" if doing else ""
        raise TargetProbeError(f"{path}: {describe_os_error(exc)}{what}") from None
