"""tui/run/importgc.py: start-up imports run without the cyclic collector,
and it is on again after them whatever happens (a dashboard or a soak runs
for hours: a collector left off would keep every cycle they make)."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest
from probetop.tui.run.importgc import imports_without_gc


def test_the_collector_is_off_inside_and_on_after() -> None:
    assert gc.isenabled()
    with imports_without_gc():
        assert not gc.isenabled()
        with imports_without_gc():  # nested: the outer block decides
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_is_on_again_after_an_import_that_fails() -> None:
    with pytest.raises(ModuleNotFoundError), imports_without_gc():
        import probetop_no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with imports_without_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["http", "--json", "http://127.0.0.1:1/"], ["http", "--count", "1", "x:1"]],
    ids=["version", "one-off", "repeated"],
)
def test_the_console_script_leaves_the_collector_on(argv: list[str]) -> None:
    """Whatever path tui/fastpath.py takes (its first line turns the collector
    off), the command runs with it on."""
    script = (
        "import gc, sys\n"
        "import probetop.tui.fastpath as fastpath\n"
        "from probetop.probes.http import FAMILY\n"
        "seen = []\n"
        "import probetop.tui.main as main\n"
        "real = main.run_plan\n"
        "def run_plan(plan):\n"
        "    seen.append(gc.isenabled())\n"
        "    return 0\n"
        "main.run_plan = run_plan\n"
        "one_off = FAMILY.one_off\n"
        "def spy(*a, **k):\n"
        "    seen.append(gc.isenabled())\n"
        "    return 0\n"
        "object.__setattr__(FAMILY, 'one_off', spy)\n"
        "try:\n"
        "    fastpath.main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    seen.append(gc.isenabled())\n"
        "print(seen, gc.isenabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("True"), out.stdout
    assert "False" not in out.stdout, out.stdout
