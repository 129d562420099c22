"""What reading /proc/self/mountinfo needs in every family.

Contract: ``PSEUDO_FILESYSTEMS`` names the filesystem types that are kernel
interfaces, not storage (/proc, /sys, /dev ...): probetop neither writes a
recording to a file on one nor measures one (reading some has side effects,
writing one changes a kernel setting). ``unescape(field)`` undoes the octal
escapes mountinfo and /proc/swaps use for space, tab, newline and backslash
(``\\040`` ...); anything else is left as it is.
"""

from __future__ import annotations

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
