"""probes/core/native_objects.py: a numba loop kept as object code runs in a
process that never imports numba, gives numba's results, and is refused
when its sources changed or its arguments are not what it was built for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from holder import holding

# A loop like the disk and ICMP ones: arrays in and out, a scratch array of
# its own (numba's allocator, which the kept code replaces), libc by symbol.
LOOP = """
import numba
import numpy as np
from numba import types

_clock = types.ExternalFunction("clock_gettime", types.int32(types.int32, types.int64))


@numba.njit(nogil=True)
def fill(out, table, scale, flag):
    scratch = np.zeros(out.shape[0] + 3, dtype=np.int64)
    ts = np.zeros(2, dtype=np.int64)
    _clock(1, ts.ctypes.data)
    for i in range(out.shape[0]):
        scratch[i] = table[i % table.shape[0], 1] * scale
        out[i] = scratch[i] + (1 if flag else 0)
    return np.int64(out.sum() + (ts[0] > 0))
"""

BUILD = """
import sys, numpy as np
sys.path.insert(0, {tmp!r})
import kept_loop
from probetop.probes.core import native_objects
out = np.zeros(5, np.int64)
table = np.arange(6, dtype=np.int64).reshape(3, 2)
print(kept_loop.fill(out, table, 10, True))
native_objects.build("test.fill", kept_loop.fill, [kept_loop.__file__])
"""

LOAD = """
import json, sys, numpy as np
from probetop.probes.core import native_objects
loop = native_objects.load("test.fill", [{src!r}])
if loop is None:
    print(json.dumps(None)); sys.exit(0)
out = np.zeros(5, np.int64)
table = np.arange(6, dtype=np.int64).reshape(3, 2)
total = loop(out, table, 10, True)
errors = []
for bad in (np.zeros(5, np.int32), np.zeros((5, 1), np.int64), np.zeros(10, np.int64)[::2]):
    try:
        loop(bad, table, 10, True)
    except TypeError as exc:
        errors.append(str(exc))
print(json.dumps({{"total": total, "out": out.tolist(), "errors": errors,
                  "numba": "numba" in sys.modules}}))
"""


def _run(code: str, cache: Path) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """The loop built and kept in a private cache: (its source, the cache, numba's total)."""
    tmp = tmp_path_factory.mktemp("kept")
    src = tmp / "kept_loop.py"
    src.write_text(LOOP)
    cache = tmp / "cache"
    cache.mkdir(mode=0o700)
    total = int(_run(BUILD.format(tmp=str(tmp)), cache))
    return src, cache, total


def test_kept_loop_runs_without_numba_and_matches_numba(kept: tuple[Path, Path, int]) -> None:
    src, cache, numba_total = kept
    got = json.loads(_run(LOAD.format(src=str(src)), cache))
    assert got is not None, "the kept loop did not load"
    assert got["numba"] is False
    assert got["out"] == [11, 31, 51, 11, 31]  # table[i % 3, 1] * 10 + 1
    assert got["total"] == numba_total
    assert len(got["errors"]) == 3  # wrong dtype, dimensions, order: refused, not run


def test_changed_sources_make_the_kept_loop_stale(kept: tuple[Path, Path, int]) -> None:
    src, cache, _ = kept
    original = src.read_text()
    try:
        src.write_text(original + "\n# changed\n")
        assert json.loads(_run(LOAD.format(src=str(src)), cache)) is None
    finally:
        src.write_text(original)
    assert json.loads(_run(LOAD.format(src=str(src)), cache)) is not None


def test_another_cpu_does_not_load_it(kept: tuple[Path, Path, int]) -> None:
    src, cache, _ = kept
    (meta_path,) = (cache / "objects").glob("test.fill-*.json")
    original = meta_path.read_text()
    meta = json.loads(original)
    try:
        meta["machine"]["cpu"] = "some-other-cpu"
        meta_path.write_text(json.dumps(meta))
        assert json.loads(_run(LOAD.format(src=str(src)), cache)) is None
    finally:
        meta_path.write_text(original)


def test_a_loop_raising_through_numba_runtime_is_refused(tmp_path: Path) -> None:
    """A loop whose code needs numba's runtime beyond allocation (here:
    printing) is not kept: numba's own loop serves it."""
    src = tmp_path / "printing_loop.py"
    src.write_text(
        textwrap.dedent(
            """
            import numba

            @numba.njit(nogil=True)
            def talk(n):
                print(n)
                return n
            """
        )
    )
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import printing_loop\n"
        "from probetop.probes.core import native_objects\n"
        "printing_loop.talk(1)\n"
        "try:\n"
        "    native_objects.build('test.talk', printing_loop.talk, [printing_loop.__file__])\n"
        "    print('kept')\n"
        "except ValueError as exc:\n"
        "    print('refused')\n"
    )
    assert _run(code, cache) == "refused"


@pytest.mark.parametrize("damage", ["cut short", "empty", "another build"])
def test_a_damaged_object_is_refused_not_run(kept: tuple[Path, Path, int], damage: str) -> None:
    """A .o cut short by a crash, emptied, or from another build than its
    .json (two compiles at once) is refused before the JIT sees it: handing
    a malformed object to the JIT killed the process (SIGSEGV) at every
    start."""
    src, cache, _ = kept
    (obj,) = (cache / "objects").glob("test.fill-*.o")
    original = obj.read_bytes()
    damaged = {
        "cut short": original[: len(original) // 2],
        "empty": b"",
        "another build": original[:-1] + bytes([original[-1] ^ 0xFF]),
    }[damage]
    try:
        obj.write_bytes(damaged)
        assert json.loads(_run(LOAD.format(src=str(src)), cache)) is None
    finally:
        obj.write_bytes(original)
    assert json.loads(_run(LOAD.format(src=str(src)), cache)) is not None


def test_needs_lists_what_the_code_generator_adds(tmp_path: Path) -> None:
    """``needs`` (checked in the process before loading) comes from the
    object's own symbol table: an intrinsic the code generator lowers to a
    libm call (math.log10 -> log10) is in it; the IR's declarations missed it."""
    src = tmp_path / "libm_loop.py"
    src.write_text(
        textwrap.dedent(
            """
            import math
            import numba

            @numba.njit(nogil=True)
            def decibels(out):
                for i in range(out.shape[0]):
                    out[i] = math.log10(out[i] + 1.0)
            """
        )
    )
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    code = (
        f"import sys, json, numpy as np; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import libm_loop, glob\n"
        "from probetop.probes.core import native_objects\n"
        "libm_loop.decibels(np.zeros(3))\n"
        "native_objects.build('test.db', libm_loop.decibels, [libm_loop.__file__])\n"
        f"(meta,) = glob.glob({str(cache / 'objects' / 'test.db-*.json')!r})\n"
        "code = open(meta[:-5] + '.o', 'rb').read()\n"
        "print(json.dumps([json.load(open(meta))['needs'],"
        " native_objects.undefined_symbols(code)]))\n"
    )
    needs, undefined = json.loads(_run(code, cache))
    assert "log10" in needs
    assert needs == undefined  # every symbol the object leaves to the process


def _prune_now(cache: Path, days_ago: float = 0.0) -> int:
    import time

    from probetop.probes.core import native_cache

    when = time.time() + days_ago * 86400
    return native_cache.prune_objects(str(cache / "objects"), when, 30).entries


def test_objects_of_gone_sources_or_long_unused_are_pruned(tmp_path: Path) -> None:
    """objects/ by the numba entries' rules: sources gone or 30 days unused
    go; recent ones of live sources and leftovers under a day old stay."""
    import time

    objects = tmp_path / "cache" / "objects"
    objects.mkdir(parents=True)
    live = tmp_path / "live.py"
    live.write_text("x = 1\n")

    def kept_loop(name: str, paths: list[str], age_days: float = 0.0) -> list[Path]:
        files = [objects / f"{name}.o", objects / f"{name}.json", objects / f"{name}.lock"]
        files[0].write_bytes(b"\x7fELF" + b"\0" * 60)
        files[1].write_text(json.dumps({"paths": paths}))
        files[2].write_bytes(b"")
        stamp = time.time() - age_days * 86400
        for f in files:
            os.utime(f, (stamp, stamp))
        return files

    fresh = kept_loop("disk.sync_loop-aaaa", [str(live)], age_days=29)
    gone = kept_loop("disk.sync_loop-bbbb", [str(live), str(tmp_path / "deleted.py")])
    unused = kept_loop("icmp.run_slice-cccc", [str(live)], age_days=31)
    old_tmp = objects / "icmp.run_slice-dddd.o.123.tmp"
    old_tmp.write_bytes(b"x")
    os.utime(old_tmp, (time.time() - 2 * 86400,) * 2)
    new_tmp = objects / "icmp.run_slice-eeee.o.124.tmp"  # a build writing now
    new_tmp.write_bytes(b"x")

    assert _prune_now(tmp_path / "cache") == 2
    assert all(f.exists() for f in fresh)
    assert not any(f.exists() for f in gone + unused)
    assert not old_tmp.exists() and new_tmp.exists()


HOLD_LOOP = """
import sys
from probetop.probes.core import native_objects
loop = native_objects.load("test.fill", [{src!r}])
print("held" if loop is not None else "none", flush=True)
sys.stdin.read()
"""


def test_a_kept_loop_a_running_process_holds_is_not_pruned(
    kept: tuple[Path, Path, int],
) -> None:
    """Loaded by a running process: never pruned however old it looks; once
    that process exits, 30 days unused prune it. (Restored after: the
    module's other tests use it.)"""
    src, cache, _ = kept
    saved = {p: p.read_bytes() for p in (cache / "objects").glob("test.fill-*")}
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    with holding(HOLD_LOOP.format(src=str(src)), env=env, ready="held"):
        assert _prune_now(cache, days_ago=40) == 0
    try:
        assert _prune_now(cache, days_ago=40) == 1
        assert list((cache / "objects").glob("test.fill-*")) == []
    finally:
        for p, data in saved.items():
            p.write_bytes(data)
