"""A link or file another user planted in a shared directory (/tmp) is
never followed or written by any file probetop writes at a user's word
(``probes/core/planted.py``: the kernel's protected_symlinks and
protected_regular rules, which are off on this machine).

Seen by a hostile tester, as root, with ``nobody`` planting
``ln -s /root-owned/file /tmp/x/NAME`` in a sticky, world-writable
directory: ``--record``, ``export --out`` and ``compare --plot`` each
replaced the root-owned file, and ``iops /tmp/x/probetop.img --rw
randwrite --size 4M`` filled it with random bytes and grew it to 4 MiB.
Real runs of the command line; the other user is a real one (``nobody``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from privilege import NOBODY, as_nobody

DATA = Path(__file__).resolve().parent.parent / "data" / "demo_session.jsonl"
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
PRECIOUS = b"precious: not probetop's to write\n"

# What each command writes at NAME (a relative name in the shared directory).
WRITERS = {
    "record": ["cpu", "--time", "0.3", "--headless", "--record", "NAME"],
    "export": ["export", str(DATA), "--out", "NAME"],
    "plot": ["compare", str(DATA), str(DATA), "--plot", "NAME"],
    "textfile": ["cpu", "--time", "0.3", "--headless", "--textfile", "."],
    "iops": ["iops", "NAME", "--rw", "randwrite", "--size", "1M", "--time", "0.3", "--buffered"],
}
NAMES = {"record": "r.jsonl", "export": "e.om", "plot": "p.svg", "textfile": "probetop.prom"}


def _as_nobody(*command: str) -> None:
    done = as_nobody(*command)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky, world-writable directory, as /tmp is, and a private one for
    the file a planted link points at; removed after."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (nobody)")
    base = Path(tempfile.mkdtemp(prefix="planted-"))
    try:
        os.chmod(base, 0o755)
        (base / "shared").mkdir(mode=0o1777)
        os.chmod(base / "shared", 0o1777)
        (base / "private").mkdir(mode=0o700)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(args: list[str], name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [name if a == "NAME" else a for a in args]
    env = {**os.environ, "XDG_STATE_HOME": str(cwd.parent / "private")}
    return subprocess.run(
        [*PROBETOP, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_another_user_planted_is_not_followed(shared: Path, writer: str) -> None:
    victim = shared / "private" / "victim"
    victim.write_bytes(PRECIOUS)
    name = NAMES.get(writer, "probetop.img")
    _as_nobody("ln", "-s", str(victim), str(shared / "shared" / name))
    out = _run(WRITERS[writer], name, shared / "shared")
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "is a link that another user (uid 65534) made in" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert victim.read_bytes() == PRECIOUS
    assert (shared / "shared" / name).is_symlink()  # left as it was


@pytest.mark.parametrize("writer", ["record", "export", "iops"])
def test_a_file_another_user_planted_is_not_written(shared: Path, writer: str) -> None:
    name = NAMES.get(writer, "probetop.img")
    planted = shared / "shared" / name
    _as_nobody("sh", "-c", f"printf 'theirs' > '{planted}'")
    out = _run(WRITERS[writer], name, shared / "shared")
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "belongs to another user (uid 65534)" in out.stderr, out.stderr
    assert planted.read_bytes() == b"theirs" and planted.stat().st_uid == NOBODY


@pytest.mark.parametrize("writer", ["export", "record"])
def test_our_own_link_there_is_still_followed(shared: Path, writer: str) -> None:
    """A link of our own in the shared directory is ours to follow, as the
    kernel's rule has it: the file it names is written."""
    target = shared / "private" / "out"
    (shared / "shared" / "mine").symlink_to(target)
    out = _run(WRITERS[writer], "mine", shared / "shared")
    assert out.returncode == 0, out.stderr
    text = target.read_text()
    assert text.endswith("# EOF\n") if writer == "export" else '"type":"footer"' in text
    assert (shared / "shared" / "mine").is_symlink()


@pytest.mark.parametrize("planted_kind", ["link", "file"])
def test_a_name_planted_after_the_check_is_not_written(shared: Path, planted_kind: str) -> None:
    """The window between checking a file target (missing: to be created)
    and laying it out: another user makes the name meanwhile. The layout
    neither follows their link nor writes their file (O_NOFOLLOW, then the
    opened file judged by its owner)."""
    from probetop.probes.disk.filelayout import Layout
    from probetop.probes.disk.target import resolve

    victim = shared / "private" / "victim"
    victim.write_bytes(PRECIOUS)
    name = shared / "shared" / "probetop.img"
    target = resolve(str(name), write=True, bs=4096, size=1 << 20, direct=False, may_create=True)
    assert target.create and target.identity is None
    if planted_kind == "link":
        _as_nobody("ln", "-s", str(victim), str(name))
    else:
        _as_nobody("sh", "-c", f"printf 'theirs' > '{name}'")
    with pytest.raises(OSError) as raised:
        Layout(target).run()
    said = str(raised.value)
    assert ("not followed" if planted_kind == "link" else "belongs to another user") in said
    assert victim.read_bytes() == PRECIOUS
    if planted_kind == "file":
        assert name.read_bytes() == b"theirs" and name.stat().st_uid == NOBODY
