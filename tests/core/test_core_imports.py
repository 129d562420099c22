"""The headless path never loads the UI stack; --version stays fast."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

HEADLESS_MODULES = [
    "probetop.probes",
    "probetop.probes.core.base",
    "probetop.probes.core.hub",
    "probetop.probes.record.writer",
    "probetop.probes.record.reader",
    "probetop.probes.system.collectors",
    "probetop.tui.run.demo_targets",
    "probetop.tui.run.runner",
    "probetop.tui.run.launch",
    "probetop.tui.cli.parser",
    "probetop.tui.main",
    "probetop.tui.cli.plan",
]
UI_MODULES = ("textual", "rich", "plotext", "numba", "scapy")


def _loaded_after(code: str) -> set[str]:
    script = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_headless_modules_do_not_import_ui_or_heavy_libraries():
    loaded = _loaded_after("\n".join(f"import {m}" for m in HEADLESS_MODULES))
    bad = sorted(m for m in loaded if m.split(".")[0] in UI_MODULES)
    assert bad == [], f"headless path imported: {bad[:10]}"


def test_every_probe_module_is_headless():
    import pkgutil

    import probetop.probes as pkg

    names = [m.name for m in pkgutil.walk_packages(pkg.__path__, "probetop.probes.")]
    assert "probetop.probes.cpu.probe" in names and "probetop.probes.core.hub" in names
    loaded = _loaded_after("\n".join(f"import {m}" for m in names))
    ui = sorted(m for m in loaded if m.split(".")[0] in ("textual", "rich", "plotext"))
    assert ui == [], ui
    assert not any(m.startswith("probetop.tui") for m in loaded)


def test_headless_run_never_loads_textual():
    script = (
        "import sys\n"
        "from probetop.tui.main import main\n"
        "code = main(['--headless', '--time', '0.3', '--interval', '0.1'])\n"
        "assert 'textual' not in sys.modules, 'textual loaded'\n"
        "print('ok', code)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok 0")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_version_is_fast():
    # CPU time, not wall time: what heavy imports cost, whatever else the
    # machine runs (at a load average of 59 on 2 cores, wall time is ~30x).
    before = _children_cpu_s()
    out = subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", "--version"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = _children_cpu_s() - before
    assert out.returncode == 0 and out.stdout.startswith("probetop ")
    assert took < 5, f"--version took {took:.2f} s of CPU"


def test_the_version_is_the_installed_distributions_and_costs_no_metadata_lookup():
    """pyproject.toml reads the version from probes/__init__.py: one place,
    and a start-up that never imports importlib.metadata (15-25 ms)."""
    from importlib import metadata

    import probetop.probes

    assert probetop.probes.version() == metadata.version("probetop")
    script = (
        "import sys; from probetop.probes import version; version(); "
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_building_the_parser_loads_no_heavy_library():
    # --help and --version import every command module: they must keep
    # numba, scapy, pycurl and Textual imports inside functions.
    loaded = _loaded_after("from probetop.tui.cli.parser import build_parser\nbuild_parser()")
    heavy = sorted(m for m in loaded if m.split(".")[0] in (*UI_MODULES, "pycurl"))
    assert heavy == [], heavy


def test_the_passive_dashboard_loads_no_probe_library() -> None:
    """The dashboard's own code, the passive probes and their panes: none of
    the libraries only one probe needs (README: what the install weighs)."""
    code = (
        "from probetop.tui.ui.app import make_app\n"
        "from probetop.tui.run.viewconfig import LiveView\n"
        "from probetop.probes.system import passive_probes\n"
        "from probetop.tui.ui.widgets.registry import pane_for\n"
        "from probetop.probes.core.base import describe\n"
        "app = make_app(LiveView(probes=list(passive_probes(1.0))))\n"
        "for p in app.config.probes:\n"
        "    pane_for(describe(p))\n"
    )
    loaded = _loaded_after(code)
    heavy = {"numba", "numpy", "scapy", "pycurl", "plotext", "prometheus_client", "llvmlite"}
    assert not heavy & {m.split(".")[0] for m in loaded}


def test_a_plan_without_assertions_loads_no_probe_family() -> None:
    """The --assert catalog loads every family's front door: a dashboard
    started without --assert must not pay for it (start-up, issue 15)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from probetop.tui.cli.parser import build_parser, commands_needed, make_plan\n"
        "argv = ['--interval', '1']\n"
        "make_plan(build_parser(commands_needed(argv)).parse_args(argv), argv)\n"
        "loaded = sorted(m for m in sys.modules if m in ('probetop.tui.analysis.catalog',"
        " 'probetop.probes.http', 'probetop.probes.icmp', 'probetop.probes.disk',"
        " 'probetop.probes.cpu'))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_front_doors_build_trackers_and_checks_on_first_use() -> None:
    """A family's Prometheus tracker and --assert checks load when asked
    for (--metrics, --textfile, --assert, export, compare), not with its
    front door, which every command imports (start-up)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from probetop.probes import registry\n"
        "registry.all_families()  # every front door and its descriptor\n"
        "from probetop.probes import cpu, disk\n"
        "print(sorted(m for m in sys.modules if m.endswith(('.metrics', '.checks',"
        " '_metrics', 'core.tracker', 'core.metricdefs'))))\n"
        "assert cpu.FAMILY.tracker().KIND == cpu.FAMILY.focus\n"
        "assert disk.WARMUP.checks().kind == disk.WARMUP_KIND\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_commands_help_loads_that_command_alone() -> None:
    """`probetop iops --help` prints the iops page only: the other families'
    front doors are not loaded for it (each costs start-up); the main help,
    which lists every command, loads them all."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from probetop.tui.cli.parser import build_parser, commands_needed\n"
        "argv = sys.argv[1:]\n"
        "try:\n"
        "    build_parser(commands_needed(argv)).parse_args(argv)\n"
        "except SystemExit:\n"
        "    pass\n"
        "doors = ('cpu', 'mem', 'disk', 'icmp', 'http')\n"
        "print(','.join(d for d in doors if f'probetop.probes.{d}' in sys.modules),"
        " file=sys.stderr)\n"
    )
    for argv, doors in (
        (["iops", "--help"], "disk"),
        (["http", "-h"], "http"),
        (["--help"], "cpu,mem,disk,icmp,http"),
        (["-h", "cpu"], "cpu,mem,disk,icmp,http"),
    ):
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "usage: probetop" in out.stdout, argv
        assert out.stderr.strip() == doors, argv
