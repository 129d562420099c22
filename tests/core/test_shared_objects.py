"""The install's kept loops (probes/core/native_objects.py ``shared_dir``):
`probetop compile` by the install's owner publishes them; a user whose own
cache has none loads them instead of compiling for a minute (service
accounts, colleagues); a directory or file someone else could have written
is never loaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from probetop.probes.core import native_objects
from probetop.probes.disk import workers

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
NAME = "disk.sync_loop"


@pytest.fixture(scope="module")
def published() -> Path:
    """The install's directory after `probetop compile` (skips when this user
    does not own the install: nothing is published then)."""
    if os.stat(sys.prefix).st_uid != os.geteuid():
        pytest.skip("this user does not own the install (sys.prefix): compile publishes nothing")
    proc = subprocess.run(
        [*PROBETOP, "compile", "--json"], capture_output=True, text=True, timeout=280
    )
    assert proc.returncode == 0, proc.stderr
    shared = Path(native_objects.shared_dir())
    assert f'"shared": "{shared}"' in proc.stdout, proc.stdout
    assert (
        shared / f"{Path(native_objects._base(str(shared), NAME, workers._SOURCES)).name}.o"
    ).is_file()
    return shared


def test_a_user_without_a_cache_loads_the_install_s_loops(published: Path, tmp_path: Path) -> None:
    # A fresh private cache (nothing of its own) and numba never imported:
    # the loops come from the install, and the note says nothing compiled.
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), HOME=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("PROBETOP_SHARED_OBJECTS", None)  # the suite's conftest turns it off
    code = (
        "import sys\n"
        "from probetop.probes.core import native_objects\n"
        "from probetop.probes.disk import workers\n"
        "print(workers._kept_kernels() is not None, native_objects.used_shared(),"
        " 'numba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.stdout.split() == ["True", "True", "False"], out.stderr
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(env, PROBETOP_SHARED_OBJECTS="off"))  # fmt: skip
    assert off.stdout.split()[:2] == ["False", "False"], off.stderr


@pytest.fixture
def copy_of(published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The published loops copied to a tree of this test's own, read as the install's."""
    where = tmp_path / "share" / "probetop" / "objects"
    shutil.copytree(published, where)
    for d in (where.parent.parent, where.parent, where):
        d.chmod(0o755)
    monkeypatch.setattr(native_objects, "shared_dir", lambda: str(where))
    monkeypatch.delenv("PROBETOP_SHARED_OBJECTS", raising=False)
    yield where


def _loads() -> bool:
    return native_objects._load_shared(NAME, workers._SOURCES) is not None


def _files(where: Path) -> tuple[Path, Path]:
    base = Path(native_objects._base(str(where), NAME, workers._SOURCES))
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".o")


def test_the_copy_loads_as_is(copy_of: Path) -> None:
    assert _loads()


@pytest.mark.parametrize("which", ["objects", "probetop", "share"])
def test_a_directory_others_may_write_is_not_loaded(copy_of: Path, which: str) -> None:
    d = {"objects": copy_of, "probetop": copy_of.parent, "share": copy_of.parent.parent}[which]
    d.chmod(0o775)
    assert not _loads()
    d.chmod(0o757)
    assert not _loads()


def test_a_file_others_may_write_a_symlink_or_a_changed_object_is_not_loaded(
    copy_of: Path,
) -> None:
    _, obj = _files(copy_of)
    obj.chmod(0o666)
    assert not _loads()
    obj.chmod(0o644)
    aside = obj.with_name("elsewhere.o")
    obj.rename(aside)
    obj.symlink_to(aside)
    assert not _loads()
    obj.unlink()
    data = bytearray(aside.read_bytes())
    data[len(data) // 2] ^= 0xFF  # not the object its .json names
    obj.write_bytes(bytes(data))
    obj.chmod(0o644)
    assert not _loads()


def test_a_file_owned_by_another_user_is_not_loaded(copy_of: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    meta, _ = _files(copy_of)
    os.chown(meta, 65534, 65534)
    assert not _loads()


def test_the_owner_s_compile_with_an_empty_cache_keeps_the_install_s_loops(
    published: Path, tmp_path: Path
) -> None:
    # The owner's own cache empty (a new HOME, a cleared ~/.cache): compile
    # finds the loops in the install and builds nothing of its own. It once
    # then dropped every file there as stale, and each user's next start
    # compiled with numba for half a minute (seen as the start-up
    # benchmark's 28 s to the first number).
    before = sorted(p.name for p in published.iterdir())
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), HOME=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("PROBETOP_SHARED_OBJECTS", None)
    proc = subprocess.run([*PROBETOP, "compile", "--json"], env=env, capture_output=True,
                          text=True, timeout=280)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert '"kept": false' not in proc.stdout, proc.stdout
    assert sorted(p.name for p in published.iterdir()) == before
