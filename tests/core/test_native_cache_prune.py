"""numba's cache keeps one entry per source path ever used; probetop prunes
the stale ones (probes/core/native_cache.py): source gone, or unused for
KEEP_UNUSED_DAYS, never one a running probetop holds, never anything that is
not an entry of the chosen directory."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from holder import holding
from probetop.probes.core import native_cache

DAY = 86400.0


@pytest.fixture(autouse=True)
def _numba_keeps_its_cache_dir() -> Iterator[None]:
    """numba's own cache directory (``numba.core.config.CACHE_DIR``) as it was
    before the test. ``native_cache.configure()`` sets it when numba is
    loaded (the session warm-up, or test_entry_name_is_the_one_numba_uses,
    loaded it); run again here over a test's tmp dir, it was left pointing
    there, which monkeypatch does not undo. A later test in this process that
    imported the disk loops (tests/disk/test_kept_loops.py) then had numba
    compile them from nothing into that dir, inside its 30 s run: the numba
    loops counted 0 I/Os."""
    numba = sys.modules.get("numba")
    before = numba.core.config.CACHE_DIR if numba is not None else None
    env = os.environ.get("NUMBA_CACHE_DIR")
    yield
    numba = sys.modules.get("numba")
    if numba is not None:
        # Loaded during the test: what it read at import is the test's env.
        numba.core.config.CACHE_DIR = before if before is not None else (env or "")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh per-user cache directory ($XDG_CACHE_HOME/probetop/numba) in
    place of this process's choice; the process's own claims untouched
    (nor numba's directory: ``_numba_keeps_its_cache_dir``)."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(native_cache, "_configured", False)
    monkeypatch.setattr(native_cache, "_chosen", None)
    monkeypatch.setattr(native_cache, "_claims", {})
    root = native_cache.configure()
    assert root == str(tmp_path / "xdg" / "probetop" / "numba")
    yield Path(root)
    for fd in native_cache._claims.values():
        os.close(fd)


def make_entry(
    cache: Path, source: Path, *, marker: str | None = None, age_days: float = 0.0
) -> Path:
    """An entry as numba lays it out for code from ``source`` (index and
    code files), with our marker naming ``marker`` if given, all files
    ``age_days`` old."""
    entry = cache / native_cache.entry_name(str(source))
    entry.mkdir(parents=True)
    (entry / "native.sync_loop-10.py311.nbi").write_bytes(b"index")
    (entry / "native.sync_loop-10.py311.1.nbc").write_bytes(b"code" * 100)
    if marker is not None:
        (entry / native_cache.MARKER).write_text(marker + "\n")
    stamp = time.time() - age_days * DAY
    for p in [*entry.iterdir(), entry]:
        os.utime(p, (stamp, stamp))
    return entry


def test_entry_name_is_the_one_numba_uses() -> None:
    from numba.core.caching import UserProvidedCacheLocator

    for source in ("/work/x/probes/disk/native.py", "/tmp/a b/ü/probes/icmp/engine.py"):
        expected = UserProvidedCacheLocator.get_suitable_cache_subpath(source)
        assert native_cache.entry_name(os.path.dirname(source)) == expected


def test_entries_of_gone_or_long_unused_sources_go_the_rest_stay(
    cache: Path, tmp_path: Path
) -> None:
    live = tmp_path / "tree" / "probes" / "disk"
    venv = tmp_path / "venv" / "probes" / "icmp"
    live.mkdir(parents=True)
    venv.mkdir(parents=True)
    gone = tmp_path / "deleted-clone" / "probes" / "disk"
    kept = {
        "live": make_entry(cache, live, marker=str(live), age_days=29),
        "unmarked recent": make_entry(cache, tmp_path / "old-version" / "disk", age_days=2),
        # A marker whose path is not the entry's (hash differs): age decides.
        "wrong marker": make_entry(cache, tmp_path / "other" / "icmp", marker=str(gone)),
    }
    pruned = {
        "source gone": make_entry(cache, gone, marker=str(gone)),
        "live but unused 31 days": make_entry(cache, venv, marker=str(venv), age_days=31),
        "unmarked, 31 days": make_entry(cache, tmp_path / "older" / "disk", age_days=31),
    }
    sizes = sum(f.stat().st_size for p in pruned.values() for f in p.iterdir())

    result = native_cache.prune()

    assert {k for k, p in kept.items() if not p.exists()} == set()
    assert {k for k, p in pruned.items() if p.exists()} == set()
    assert (result.entries, result.bytes) == (3, sizes)
    left = set(os.listdir(cache)) - {native_cache.PRUNE_LOCK}
    assert sorted(left) == sorted(p.name for p in kept.values())


def test_an_entry_from_before_markers_is_traced_by_the_path_in_its_code(
    cache: Path, tmp_path: Path
) -> None:
    """numba's compiled code names its source file; a path whose SHA-1 is the
    entry's is the entry's source (a mere mention of another path is not)."""
    gone = tmp_path / "removed" / "probes" / "disk"
    traced = make_entry(cache, gone)
    (traced / "native.sync_loop-10.py311.1.nbc").write_bytes(
        b"\x80\x05junk# File: " + str(gone / "native.py").encode() + b"\n\x00more"
    )
    live = tmp_path / "live" / "probes" / "disk"
    live.mkdir(parents=True)
    alive = make_entry(cache, live)
    (alive / "native.sync_loop-10.py311.1.nbc").write_bytes(
        b"# File: " + str(live / "native.py").encode() + b"\n"
    )
    # Names a gone path, but not its own: unknown source, recent: kept.
    liar = make_entry(cache, tmp_path / "elsewhere" / "disk")
    (liar / "native.sync_loop-10.py311.1.nbc").write_bytes(
        b"# File: " + str(gone / "native.py").encode() + b"\n"
    )

    assert native_cache.prune().entries == 1
    assert not traced.exists() and alive.exists() and liar.exists()


def test_only_real_entries_of_the_chosen_directory_are_touched(cache: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    old = time.time() - 90 * DAY
    os.utime(outside, (old, old))
    sha = hashlib.sha1(b"/gone").hexdigest()
    # A symlink named like an entry, to an old directory: neither followed nor removed.
    (cache / f"disk_{sha}").symlink_to(outside)
    # Not numba's naming: left alone however old.
    for name in ("notes", "disk_1234", f"disk_{sha.upper()}"):
        (cache / name).mkdir()
        os.utime(cache / name, (old, old))
    (cache / f"icmp_{sha}").write_text("a file, not an entry")
    os.utime(cache / f"icmp_{sha}", (old, old))

    assert native_cache.prune().entries == 0
    assert (outside / "precious").exists() and (cache / f"disk_{sha}").is_symlink()
    assert {"notes", "disk_1234", f"disk_{sha.upper()}", f"icmp_{sha}"} <= set(os.listdir(cache))


def test_a_shared_numba_cache_dir_loses_only_our_marked_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NUMBA_CACHE_DIR the user chose may hold other numba programs' entries:
    only ones with our marker are ours to prune."""
    shared = tmp_path / "shared"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(shared))
    monkeypatch.setattr(native_cache, "_configured", False)
    monkeypatch.setattr(native_cache, "_chosen", None)
    monkeypatch.setattr(native_cache, "_claims", {})
    assert native_cache.configure() == str(shared)
    gone = tmp_path / "gone" / "disk"
    ours = make_entry(shared, gone, marker=str(gone))
    theirs = make_entry(shared, tmp_path / "their-project" / "disk", age_days=400)
    assert native_cache.prune().entries == 1
    assert not ours.exists() and theirs.exists()


HOLD = """
import sys
from probetop.probes.core import native_cache
native_cache.claim(sys.argv[1])
print("claimed", flush=True)
sys.stdin.read()
"""


def test_an_entry_a_running_probetop_holds_stays_until_it_exits(
    cache: Path, tmp_path: Path
) -> None:
    source = tmp_path / "clone" / "probes" / "icmp"
    source.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    with holding(HOLD, str(source / "engine.py"), env=env, ready="claimed"):
        entry = cache / native_cache.entry_name(str(source))
        assert (entry / native_cache.MARKER).read_text() == f"{source}\n"
        source.rmdir()  # the clone is gone while its probetop still runs
        assert native_cache.prune().entries == 0
        assert entry.is_dir()
    assert native_cache.prune().entries == 1
    assert not entry.exists()


def test_loading_the_loops_marks_this_tree_and_prunes_a_gone_clone(tmp_path: Path) -> None:
    """End to end: the module with the disk loops, imported in a fresh process
    with an empty-but-for-a-stale-entry cache, claims this tree's entry (a new
    one) and so prunes the stale entry."""
    root = tmp_path / "xdg" / "probetop" / "numba"
    root.mkdir(parents=True, mode=0o700)
    gone = tmp_path / "old-clone" / "probes" / "disk"
    stale = make_entry(root, gone, marker=str(gone))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    code = "import probetop.probes.disk.native as n; print(n.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    source = os.path.dirname(out.stdout.strip())
    entry = root / native_cache.entry_name(source)
    assert (entry / native_cache.MARKER).read_text() == f"{source}\n"
    assert not stale.exists()


RACER = """
import sys
from probetop.probes.core import native_cache
print("ready", flush=True)
sys.stdin.readline()  # both started: claim (a new entry: prune) at once
native_cache.claim(sys.argv[1])
"""


def test_two_processes_making_entries_at_once_both_prune_without_failing(tmp_path: Path) -> None:
    """CI run 3: `probetop compile` building two families side by side in a
    cache holding entries of removed clones failed with FileNotFoundError on
    a stale entry's code file (one process read the entry the other was
    removing). Each round: two processes claim new entries at the same
    moment over 100 stale entries from before markers (each traced by the
    path in its code): both must succeed and every stale entry go."""
    xdg = tmp_path / "xdg"
    root = xdg / "probetop" / "numba"
    root.mkdir(parents=True, mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(xdg)
    failures: list[str] = []
    for round_ in range(8):
        stale = []
        for i in range(100):
            gone = tmp_path / f"gone-{round_}-{i}" / "probes" / "icmp"
            entry = make_entry(root, gone)
            for j in range(30):  # one code file per cached function, as numba writes
                (entry / f"engine.f{j}-10.py311.1.nbc").write_bytes(
                    b"# File: " + str(gone / "engine.py").encode() + b"\n" + b"x" * 200
                )
            stale.append(entry)
        racers = []
        for family in ("disk", "icmp"):
            source = tmp_path / f"clone-{round_}" / "probes" / family
            source.mkdir(parents=True)
            racers.append(
                subprocess.Popen(
                    [sys.executable, "-c", RACER, str(source / "x.py")],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            )
        for p in racers:  # both imported and waiting (a fixed 1 s: 8 s of 32 s)
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in racers:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in racers:
            _, err = p.communicate(timeout=120)
            if p.returncode:
                failures.append(err.strip().splitlines()[-1])
        assert [e for e in stale if e.exists()] == [], f"round {round_}"
    assert failures == []


def test_a_prune_under_way_elsewhere_is_waited_for_or_skipped(cache: Path, tmp_path: Path) -> None:
    """One prune at a time per directory: a claim's prune skips while another
    process prunes; `compile`'s waits for it."""
    import fcntl

    gone = tmp_path / "gone" / "disk"
    stale = make_entry(cache, gone, marker=str(gone))
    fd = os.open(cache / native_cache.PRUNE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert native_cache.prune(wait=False).entries == 0
        assert stale.exists()
    finally:
        os.close(fd)
    assert native_cache.prune().entries == 1
    assert not stale.exists()
