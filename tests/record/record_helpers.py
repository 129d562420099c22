"""Real targets for the recording tests: small tmpfs mounts, loop devices,
an unprivileged user. Everything created here is removed again."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from probetop.probes.record import linecheck, reader

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32): xfstests' "godown"
EXT4_GOING_FLAGS_DEFAULT = 0  # sync everything, then fail every operation with EIO


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (mounts a tmpfs, switches to nobody)")


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "1m", *, options: str = "") -> Iterator[Path]:
    """A private tmpfs of ``size`` mounted on ``where`` (created), unmounted after."""
    need_root()
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size},mode=0777" + (f",{options}" if options else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(mount: Path, leave_bytes: int) -> None:
    """Fill the filesystem at ``mount`` with a ballast file (ours) until only
    about ``leave_bytes`` are free."""
    st = os.statvfs(mount)
    free = st.f_bavail * st.f_frsize
    with (mount / "ballast").open("wb") as f:
        f.write(b"\0" * max(0, free - leave_bytes))


def free_bytes(mount: Path) -> int:
    st = os.statvfs(mount)
    return st.f_bavail * st.f_frsize


@contextlib.contextmanager
def ext4_on_loop(image: Path, where: Path, size_mib: int = 32) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem in ``image`` (a file we create) mounted on ``where``
    through a loop device, detached again after. Yields (mount point, device)."""
    need_root()
    for tool in ("losetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    with image.open("wb") as f:
        f.truncate(size_mib << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", dev, str(where)], check=True)
        try:
            yield where, dev
        finally:
            subprocess.run(["umount", str(where)], check=False)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def shut_down_ext4(mount: Path) -> None:
    """Make every later operation on the ext4 at ``mount`` fail with EIO
    (after syncing what was written: a disk that died)."""
    import fcntl
    import struct

    fd = os.open(mount, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_DEFAULT))
    finally:
        os.close(fd)


def as_nobody(func, *args):  # type: ignore[no-untyped-def]
    """Run ``func(*args)`` in a forked child that is really uid/gid nobody;
    returns what it returned or the message of the exception it raised, as
    ("ok", value) or (exception class name, message)."""
    need_root()
    import pickle

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            try:
                result: tuple[str, object] = ("ok", func(*args))
            except BaseException as exc:
                result = (type(exc).__name__, str(exc))
            os.write(write, pickle.dumps(result))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


def nobody_cli(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``probetop args`` as the unprivileged user nobody.

    This venv's interpreter may live under /root (not readable by nobody);
    the system Python of the same version runs the same installed code."""
    need_root()
    if shutil.which("runuser") is None or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip("needs runuser and /usr/bin/python3")
    version = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is {version}, not this Python's version")
    # Every site directory of this interpreter, in its order: a venv made with
    # --system-site-packages finds some dependencies in the base Python's.
    sites = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    setup = (
        "import os, site, sys; [site.addsitedir(d) for d in sys.argv.pop(1).split(os.pathsep)]; "
    )
    nobody_python = ["runuser", "-u", "nobody", "--", SYSTEM_PYTHON, "-c"]
    check = setup + "import importlib; [importlib.import_module(m) for m in sys.argv[1:]]"
    imported = subprocess.run(
        [*nobody_python, check, sites, "probetop", *_dependency_modules()],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )
    if imported.returncode != 0:
        last = (imported.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(
            f"user nobody cannot import probetop and its dependencies from {sites} ({last}): "
            "a venv over a Python in a private home (--system-site-packages) or a clone "
            "in a private directory; a clean clone's `make test` venv has neither"
        )
    code = setup + "from probetop.tui.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [*nobody_python, code, sites, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )


def _dependency_modules() -> list[str]:
    """The top-level modules of probetop's required distributions (not extras)."""
    from importlib.metadata import packages_distributions, requires

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    wanted = {
        norm(re.split(r"[ ;<>=!~\[]", req, maxsplit=1)[0])
        for req in requires("probetop") or []
        if "extra ==" not in req
    }
    return sorted(
        module
        for module, dists in packages_distributions().items()
        if module.isidentifier() and any(norm(d) in wanted for d in dists)
    )


@contextlib.contextmanager
def reference_only() -> Iterator[None]:
    """load_session with its fast paths turned off: every line on json."""
    saved = reader.decode_block, linecheck._fast_line
    reader.decode_block = lambda raws, data=None: None  # type: ignore[assignment]
    linecheck._fast_line = lambda raw: None  # type: ignore[assignment]
    try:
        yield
    finally:
        reader.decode_block, linecheck._fast_line = saved
