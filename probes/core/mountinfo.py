"""What reading /proc/self/mountinfo needs in every family, and file kinds in words.

Contract: ``PSEUDO_FILESYSTEMS`` names the filesystem types that are kernel
interfaces, not storage (/proc, /sys, /dev ...): probetop neither writes a
recording to a file on one nor measures one (reading some has side effects,
writing one changes a kernel setting). ``unescape(field)`` undoes the octal
escapes mountinfo and /proc/swaps use for space, tab, newline and backslash
(``\\040`` ...); anything else is left as it is. ``filesystem_type(dir)``
is the type of the filesystem that holds ``dir``; ``file_kind(mode)`` what a
stat mode is, in words ("a FIFO (named pipe)"): the recorder's target checks
and the recording reader refuse the same kinds with the same words.
"""

from __future__ import annotations

import os
import stat

PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs",
        "tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl", "efivarfs",
        "mqueue", "binfmt_misc", "selinuxfs", "hugetlbfs", "rpc_pipefs", "nsfs",
        "autofs", "nfsd",
    }
)  # fmt: skip

_OCTAL = frozenset("01234567")


def unescape(field: str) -> str:
    """``field`` with each ``\\NNN`` (three octal digits) replaced by its character."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and set(code) <= _OCTAL:
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def file_kind(mode: int) -> str:
    """What a stat mode is, in words ("a FIFO", "a character device"...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def filesystem_type(directory: str) -> str | None:
    """The filesystem type that holds ``directory`` (Linux mountinfo), or None."""
    try:
        st = os.stat(directory)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            rows = f.read().splitlines()
    except OSError:
        return None
    want = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    best: tuple[int, str] | None = None
    by_dev: str | None = None
    real = os.path.realpath(directory)
    for row in rows:
        left, sep, right = row.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        fstype = right.split()[0]
        if fields[2] == want:
            by_dev = fstype  # the last mount of this device wins, as in the kernel
        mount = unescape(fields[4])
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) >= best[0]):
            best = (len(mount), fstype)
    if by_dev is not None:
        return by_dev
    return best[1] if best is not None else None
