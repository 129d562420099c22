"""The demo's data files are laid out from the process's start, beside the
dashboard's start-up (issue 28: tui/run/demo_scratch.py), not after its
first frame in the IOPS and warm-up makers; the same files, sizes and data.

Real files in a temporary directory; no timing is asserted."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from probetop.probes import registry
from probetop.probes.core.family import DemoContext
from probetop.tui.cli.parser import build_parser, make_plan, parse_args
from probetop.tui.commands import demo
from probetop.tui.run.demo_scratch import Scratch


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _plan(*argv: str) -> Any:
    return make_plan(parse_args(build_parser(), ["demo", *argv]), ["probetop", "demo", *argv])


def _is_data(path: Path, size: int) -> bool:
    """``size`` bytes, every block allocated and none all zero (not a hole)."""
    st = path.stat()
    if st.st_size != size or st.st_blocks * 512 < size:
        return False
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            if not any(block):
                return False
    return True


def _wait(predicate: Any, timeout_s: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_the_early_files_are_the_ones_the_demo_families_ask_for(tmp_path: Path) -> None:
    asked: list[tuple[str, str, int]] = []
    for family in registry.families():
        if family.name not in ("iops", "warmup"):
            continue

        def data_file(name: str, size: int, family: str = family.name) -> Path:
            asked.append((family, name, size))
            return tmp_path / name

        ctx = DemoContext(1.0, tmp_path, "http://127.0.0.1:9", False, data_file=data_file)
        assert family.demo_probes is not None
        family.demo_probes(ctx)
    assert sorted(asked) == sorted(demo.EARLY_DATA_FILES)


def test_the_dashboards_demo_lays_its_files_out_before_any_maker_runs() -> None:
    """The joining of `probetop demo`'s dashboard, made before Textual's
    import (tui/main.py), starts writing the files at once: they are whole
    before the session begins (``joining`` never called here)."""
    from probetop.tui.main import _Joining

    joining = _Joining(_plan(), demo, set())
    scratch = joining._early
    try:
        assert isinstance(scratch, Scratch)
        assert _wait(lambda: scratch.early_layouts() == len(demo.EARLY_DATA_FILES))
        for _family, name, size in demo.EARLY_DATA_FILES:
            assert _is_data(scratch.path / name, size), name
    finally:
        joining.close()
    assert not scratch.path.exists(), "the scratch directory was left behind"


def test_only_lays_out_the_files_of_the_families_it_runs() -> None:
    from probetop.tui.main import _Joining

    joining = _Joining(_plan("--only", "iops"), demo, set())
    scratch = joining._early
    try:
        assert _wait(lambda: scratch.early_layouts() == 1)
        assert sorted(os.listdir(scratch.path)) == ["iops.img"]
    finally:
        joining.close()


def test_a_maker_that_asks_first_finishes_the_file_itself() -> None:
    """The early thread runs at a lower priority; a maker that needs its
    file before the thread is done takes it over (the thread stops within
    one write) and writes the rest at its own: the same data file."""
    scratch = Scratch({"big.img": 64 << 30, "next.img": 2 << 20})
    try:
        assert _wait(lambda: (scratch.path / "big.img").exists(), 30)
        big = scratch.data_file("big.img", 4 << 20)
        assert 4 << 20 <= big.stat().st_size < 64 << 30  # not written to the end
        assert _is_data(big, big.stat().st_size)
        # the thread went on with the next file, and left the claimed one alone
        assert _wait(lambda: scratch.early_layouts() == 1, 60)
        assert _is_data(scratch.path / "next.img", 2 << 20)
        size = big.stat().st_size
        time.sleep(0.2)
        assert big.stat().st_size == size
    finally:
        scratch.close()


def test_data_file_gives_a_whole_data_file_and_makes_what_is_missing() -> None:
    scratch = Scratch({"a.img": 8 << 20})
    try:
        a = scratch.data_file("a.img", 8 << 20)  # returns once whole
        assert _is_data(a, 8 << 20)
        assert _is_data(scratch.data_file("b.img", 3 << 20), 3 << 20)  # not announced
        assert _is_data(scratch.data_file("a.img", 10 << 20), 10 << 20)  # extended
    finally:
        scratch.close()
    assert not scratch.path.exists()


def test_closing_during_the_layout_stops_it_and_removes_the_directory() -> None:
    scratch = Scratch({"big.img": 64 << 30})  # far more than is written before the close
    assert _wait(lambda: (scratch.path / "big.img").exists(), 30)
    scratch.close()
    assert not scratch._thread.is_alive(), "the layout went on after the close"
    assert not scratch.path.exists()
    assert scratch.early_layouts() == 0
    with pytest.raises(OSError):
        scratch.data_file("big.img", 1 << 20)  # a maker that comes late


def test_the_registry_knows_which_families_have_demo_probes() -> None:
    for listed in registry.COMMANDS:
        family = registry.family(listed.name)
        assert family is not None
        assert listed.demo == (family.demo_probes is not None), listed.name


def test_the_dashboards_demo_makes_no_maker_for_a_family_without_demo_probes() -> None:
    """mem has none: its front door (~30-50 ms of the interpreter lock) is
    not imported while the other panes join."""
    import contextlib

    with contextlib.ExitStack() as stack:
        makers = demo.join_probes(_plan(), stack)
        names = [getattr(m, "args", (getattr(m, "__name__", "?"),))[0] for m in makers]
    assert "mem" not in names
    assert set(registry.DEMO_NAMES) <= set(names)
