"""A link or file another user planted in a shared directory is never
followed or written.

Why: in a sticky, world-writable directory (/tmp, /var/tmp, /dev/shm,
/run/lock) anyone may create a name before we do. A symlink another user
made at the path a root run was told to write (``--record /tmp/r.jsonl``,
``iops /tmp/probetop.img``) made it write over the file the link names: a
root-owned file was replaced by a recording, an export and a compare plot,
and an IOPS randwrite filled it with random bytes and grew it to ``--size``.
A regular file planted there stays its owner's, who reads what is written
into it. The kernel refuses both when ``fs.protected_symlinks`` and
``fs.protected_regular`` are set, and they are off on many machines
(containers, this project's VM); this is their rule, kept by probetop for
every file it writes at a user's word whatever the kernel's settings.

Contract: ``planted(path)`` is None, or why ``path`` must not be written (a
phrase to follow "cannot record to PATH: "). Refused: a symbolic link met
while resolving ``path`` (its last name or a directory's) that lies in a
sticky, world-writable directory and is owned by neither this process's
user nor that directory's owner; and, at the end, an existing regular file
so placed and so owned. ``foreign_file(st, directory)`` applies the second
rule to a file already open (``fstat``), for a name swapped in after the
check. Reads only: it creates, follows into and changes nothing.
"""

from __future__ import annotations

import os
import stat

_STICKY_WORLD = stat.S_ISVTX | stat.S_IWOTH
_MAX_LINKS = 40  # as the kernel's; past it the open fails with ELOOP on its own


def _shared_owner(directory: str) -> int | None:
    """The owner of ``directory`` when it is sticky and world-writable, else None."""
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return st.st_uid if st.st_mode & _STICKY_WORLD == _STICKY_WORLD else None


def _foreign(owner: int, directory: str) -> bool:
    shared = _shared_owner(directory)
    return shared is not None and owner not in (os.geteuid(), shared)


def foreign_file(st: os.stat_result, directory: str) -> str | None:
    """Why a regular file with status ``st`` in ``directory`` must not be
    written (another user's, in a shared directory), or None."""
    if stat.S_ISREG(st.st_mode) and _foreign(st.st_uid, directory):
        return (
            f"it belongs to another user (uid {st.st_uid}) in {directory}, a directory "
            "anyone may write (sticky, world-writable): they would read what is written "
            "(the kernel's fs.protected_regular rule); remove it or choose another path"
        )
    return None


def planted(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` must not be written, or None (see the module docstring)."""
    text = os.fspath(path)
    current = "/" if text.startswith("/") else os.getcwd()
    pending = list(reversed(text.split("/")))  # the names still to resolve, next last
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current) or "/"
            continue
        candidate = os.path.join(current, name)
        try:
            st = os.lstat(candidate)
        except OSError:  # missing (a file to create) or unreadable: nothing planted
            current = candidate
            continue
        if not stat.S_ISLNK(st.st_mode):
            current = candidate
            continue
        if _foreign(st.st_uid, current):
            which = "it" if candidate == os.path.abspath(text) else candidate
            return (
                f"{which} is a link that another user (uid {st.st_uid}) made in "
                f"{current}, a directory anyone may write (sticky, world-writable): it is "
                "not followed (the kernel's fs.protected_symlinks rule); remove it or "
                "choose another path"
            )
        links += 1
        if links > _MAX_LINKS:
            return None
        try:
            target = os.readlink(candidate)
        except OSError:
            return None
        if target.startswith("/"):
            current = "/"
        pending.extend(reversed(target.split("/")))
    try:
        st = os.lstat(current)
    except OSError:
        return None
    return foreign_file(st, os.path.dirname(current) or "/")
