#!/usr/bin/env python3
"""Start-up of the dashboard, through a real terminal: fresh install, no set-up, warm.

For each build measured (``--reference`` adds another build's probetop,
alternated run by run with ours), the median of --repeat runs (default 5) of:

- ``probetop --version``: wall time;
- the first frame of ``probetop`` (the passive panes) and of ``probetop
  demo``: the command starts in a detached pane of a private tmux server,
  polled with ``capture-pane`` every 10 ms until the status line, every
  pane's title and the footer are on screen;
- for the demo, the first numbers: until every pane shows a measured value
  (no "compiling the native I/O loop...", "waiting for the first ...", and
  the CPU pane past "events 0").

States (issue 28's targets: fresh install first frame <= 1 s and every
demo number <= 3 s; warm first frame <= 0.4 s and every number <= 2 s):

- ``fresh``: what ``make setup`` leaves (bytecode compiled, ``probetop
  compile`` run into the per-user numba cache), then the page cache dropped
  (root only): the first run after installing;
- ``no-setup`` (``--no-setup``): an empty numba cache and no bytecode, as a
  bare ``pip install -e`` without ``probetop compile``: the worst case,
  printed for honesty, no target;
- ``warm``: right after another run.

Each build and state gets its own ``PYTHONPYCACHEPREFIX`` and
``NUMBA_CACHE_DIR`` (private directories, one set per source tree: two
trees measured at once never share them; nothing written in the builds'
trees or the user's cache); what ``probetop compile`` leaves is made once
per build and run, and copied for each ``fresh`` start and into the
``warm`` state's (a first warm run compiled the loops itself, minutes on a
loaded machine, past the 60 s a run may take). A bytecode prefix
is where Python looks for *every* module's bytecode, the standard
library's and Textual's too, so the ``fresh`` prefix starts with the
bytecode the interpreter and its packages were installed with (hard
links), then gets probetop's own as ``make setup`` compiles it. (An empty
prefix had the first run compile Textual, rich and much of the standard
library from source: about 0.8 s of CPU no install pays.) ``no-setup``
reads the installed bytecode and writes none.

``--phases``: where the passive dashboard's start-up goes, phase by phase;
also printed: heavy modules the passive dashboard imports (none should be)
and the largest imports on its path (``python -X importtime``).

``--trace``: ``probetop demo`` warm, step by step (median of --repeat, wall
seconds since the process started and the process's CPU seconds; the CPU
clock starts again at the waiter's fork): Textual imported, the App
constructed, the live mode started, the first frame written, the session's
begin, each joining family's maker, each probe started, its first sample
published and routed to its pane.

usage: benchmarks/startup.py [--repeat 5] [--no-demo] [--no-setup]
                             [--reference PATH] [--phases | --trace]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import add_figures_option, at_most, report

REPO = Path(__file__).resolve().parent.parent
PROBETOP = str(REPO / ".venv" / "bin" / "probetop")
SOCKET = f"probetop-startup-{os.getpid()}"
# The complete first frame: status line, panes, and the footer's first and
# last key bindings (the footer is drawn in one piece).
CHROME = ("probetop  |  live", " q Quit", "i Idle devs")
PASSIVE_TITLES = (*CHROME, "system.cpu", "system.disk", "system.net")
DEMO_TITLES = (*PASSIVE_TITLES, "─ cpu", "─ iops", "─ warmup", "─ icmp", "─ http")
# The focused pane's border is heavy: its title follows "━ ", not "─ " (the
# last pane to join is focused, so "─ http" alone never matched).
FOCUSED = str.maketrans("─", "━")


def on_screen(title: str, screen: str) -> bool:
    return title in screen or title.translate(FOCUSED) in screen


HEAVY = ("numba", "scapy", "pycurl", "numpy", "plotext", "prometheus_client")
TIMEOUT_S = 60.0
# (command, state, what) -> target seconds (issue 28).
TARGET_S = {
    ("probetop", "fresh", "frame"): 1.0,
    ("demo", "fresh", "frame"): 1.0,
    ("demo", "fresh", "numbers"): 3.0,
    ("probetop", "warm", "frame"): 0.4,
    ("demo", "warm", "frame"): 0.4,
    ("demo", "warm", "numbers"): 2.0,
}
# Text a pane shows until its first measured value.
PLACEHOLDERS = (
    re.compile(r"compiling the native"),
    re.compile(r"waiting for (the first|data)"),
    re.compile(r"threads \d+\s+events 0\b"),
)
CACHE_ROOT = Path(f"/tmp/probetop-startup-{os.getuid()}")


def tree_of(exe: str) -> Path:
    """The source tree of a build's probetop (``<tree>/.venv/bin/probetop``)."""
    return Path(exe).absolute().parent.parent.parent


def cache_dir(build: str, exe: str) -> Path:
    """A build's private caches, one per source tree: two checkouts measured
    at once (a helper's worktree beside the main tree), or one after the
    other with --keep-compiled, never share what `probetop compile` left. A
    kept loop is looked up by its sources' paths, so another tree's made
    every fresh start compile the loops with numba (55 s a run, seen once)."""
    digest = hashlib.sha256(str(tree_of(exe).resolve()).encode()).hexdigest()[:12]
    return CACHE_ROOT / f"{build}-{digest}"


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def drop_caches() -> bool:
    """Empty the page cache (root only); False when not allowed."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def seed_installed_bytecode(pyc: Path, python: str) -> int:
    """Link into the bytecode prefix ``pyc`` the bytecode installed beside
    every module ``python`` imports from outside the build's tree (its
    ``__pycache__`` directories): what a user's interpreter has. Returns how
    many files were linked (copied where a link cannot be made)."""
    tree = Path(python).absolute().parent.parent.parent  # <tree>/.venv/bin/python
    own = [tree / d for d in ("probes", "tui", "themes")]
    out = subprocess.run(
        [python, "-c", "import sys, json; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        check=True,
    )
    tag = sys.implementation.cache_tag
    count = 0
    seen: set[Path] = set()
    for entry in json.loads(out.stdout):
        root = Path(entry or ".").resolve()
        if not root.is_dir() or root in seen or any(root.is_relative_to(d) for d in own):
            continue
        seen.add(root)
        for cache in root.rglob("__pycache__"):
            if any(cache.resolve().is_relative_to(d) for d in own):
                continue
            target_dir = pyc / str(cache.parent).lstrip(os.sep)
            for compiled in cache.glob(f"*.{tag}.pyc"):
                target_dir.mkdir(parents=True, exist_ok=True)
                target = target_dir / compiled.name
                if target.exists():
                    continue
                try:
                    os.link(compiled, target)
                except OSError:
                    shutil.copy2(compiled, target)
                count += 1
    return count


def state_env(build: str, state: str, exe: str) -> list[str]:
    """``env`` arguments of one build in one state (module docstring); for
    ``fresh`` and ``no-setup`` the caches are emptied first, and ``fresh``
    then gets what ``make setup`` does."""
    root = cache_dir(build, exe)
    pyc, numba = root / state / "pyc", root / state / "numba"
    env = [
        "env",
        "-u",
        "PYTHONDONTWRITEBYTECODE",
        f"PYTHONPYCACHEPREFIX={pyc}",
        f"NUMBA_CACHE_DIR={numba}",
    ]
    made = root / "numba-after-compile"  # what `probetop compile` left
    if state == "warm":
        if made.is_dir() and not numba.is_dir():  # a user's cache after set-up and a run
            shutil.copytree(made, numba)
        return env
    python = str(Path(exe).parent / "python")
    tree = Path(exe).resolve().parent.parent.parent  # <tree>/.venv/bin/probetop
    dirs = [tree / d for d in ("probes", "tui", "themes") if (tree / d).is_dir()]
    shutil.rmtree(numba, ignore_errors=True)
    numba.mkdir(parents=True, mode=0o700)
    for d in dirs:  # probetop's own bytecode; the installed packages' stays
        shutil.rmtree(pyc / str(d).lstrip(os.sep), ignore_errors=True)
    # and the dataclass methods and patterns a first run compiles (tui/run/codecache.py)
    shutil.rmtree(pyc / "probetop-startup", ignore_errors=True)
    if state == "fresh":
        seeded = pyc / ".seeded"
        if not seeded.exists():
            seed_installed_bytecode(pyc, python)
            seeded.touch()
        subprocess.run([*env, python, "-m", "compileall", "-q", *map(str, dirs)], check=True)
        # What `probetop compile` leaves is the same at every run of one
        # build: made once, then copied (it took minutes a run on a loaded
        # machine, which kept --repeat 5 out of `make bench`'s time limit).
        if not made.is_dir():
            compiled = subprocess.run([*env, exe, "compile"], capture_output=True, text=True)
            if compiled.returncode != 0:  # an older build (--reference) without the command
                print(
                    f"{build}: `probetop compile` failed ({compiled.returncode}): "
                    f"{compiled.stderr.strip()[-400:]}",
                    file=sys.stderr,
                )
                subprocess.run(
                    [*env, exe, "demo", "--headless", "--time", "2"], capture_output=True
                )
            # Its own cache, or the install's (share/probetop/objects, which
            # `make setup` fills and a fresh start loads when its cache is empty).
            shared = Path(exe).parent.parent / "share" / "probetop" / "objects"
            kept = kept_loops_of(numba / "objects", tree_of(exe)) or kept_loops_of(
                shared, tree_of(exe)
            )
            if compiled.returncode == 0 and not kept:
                print(
                    f"{build}: `probetop compile` kept no loop built from {tree_of(exe)}: "
                    "its fresh starts compile them with numba",
                    file=sys.stderr,
                )
            shutil.copytree(numba, made.with_suffix(".tmp"), dirs_exist_ok=True)
            made.with_suffix(".tmp").rename(made)
        else:
            shutil.rmtree(numba)
            shutil.copytree(made, numba)
        drop_caches()
    else:  # no prefix: the installed bytecode, none written (the tree's own has none)
        env = [*env[:3], "PYTHONDONTWRITEBYTECODE=1", *env[4:]]
    return env


def kept_loops_of(objects: Path, tree: Path) -> list[str]:
    """The kept loops (``<name>-<hash>.json`` in a cache's ``objects/``)
    built from sources in ``tree``: the ones a start of that tree loads."""
    names = []
    for meta in sorted(objects.glob("*.json")):
        try:
            paths = json.loads(meta.read_text()).get("paths", [])
        except (OSError, ValueError):
            continue
        if paths and all(Path(p).is_relative_to(tree.resolve()) for p in paths):
            names.append(meta.stem)
    return names


def has_numbers(screen: str) -> bool:
    return not any(p.search(screen) for p in PLACEHOLDERS)


def first_frame(
    command: list[str], titles: tuple[str, ...], numbers: bool = False
) -> tuple[float | None, float | None]:
    """Seconds from launching ``command`` in a 120x40 terminal until every
    title is on screen, and (``numbers``) until every pane shows a value;
    None for what never came (TIMEOUT_S)."""
    session = "s"
    frame: float | None = None
    t0 = time.monotonic()
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "exec " + shlex.join(command))
    try:
        while time.monotonic() - t0 < TIMEOUT_S:
            screen = tmux("capture-pane", "-p", "-t", session)
            if frame is None and all(on_screen(t, screen) for t in titles):
                frame = time.monotonic() - t0
                if not numbers:
                    return frame, None
            if (
                frame is not None
                and all(on_screen(t, screen) for t in DEMO_TITLES)
                and has_numbers(screen)
            ):
                return frame, time.monotonic() - t0
            time.sleep(0.01)
        return frame, None
    finally:
        tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 5.0  # let it stop its probes and clean up
        while time.monotonic() < deadline and tmux("list-sessions"):
            time.sleep(0.05)
        tmux("kill-server")


# Both wrappers' clock: seconds since the process started (its start time in
# /proc, so the interpreter's own start-up counts), and the output path.
WRAPPER_CLOCK = r"""
def since_start():
    ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
base = time.perf_counter() - since_start()
out_path = sys.argv[1]
"""


# Run as `python -c PHASES_WRAPPER OUT`: the passive dashboard, with the time
# noted at each phase boundary (seconds since the process started); it exits
# at the first complete frame (the wrapper's own cost: a few wrapped calls).
PHASES_WRAPPER = (
    r"""
import os, sys, time, json, re
"""
    + WRAPPER_CLOCK
    + r"""
marks = {"python started, site imported": time.perf_counter() - base}
def mark(name): marks.setdefault(name, time.perf_counter() - base)
import probetop.tui.main as main
mark("CLI layer imported (tui.main: parser, plan, probes, recorder, asyncio)")
def wrap(obj, name, before=None, after=None):
    fn = getattr(obj, name)
    def wrapped(*a, **k):
        if before: mark(before)
        out = fn(*a, **k)
        if after: mark(after)
        return out
    setattr(obj, name, wrapped)
wrap(main, "_split_for_detach", after="command line parsed, process split (d: detach)")
run_app = main.run_app
def patched_run_app(*a, **k):
    import probetop.tui.ui.app as app_module
    mark("Textual and the app imported")
    from probetop.tui.run.livesession import LiveSession
    name = "open" if hasattr(LiveSession, "open") else "start"  # an older build: start
    start = getattr(LiveSession, name)
    def timed_open(self, *sa, **sk):
        mark("app built, Textual started: CSS, compose, mount")
        out = start(self, *sa, **sk)
        mark("session opened: hub, probes prepared and announced")
        return out
    async def timed_start(self, *sa, **sk):
        mark("app built, Textual started: CSS, compose, mount")
        out = await start(self, *sa, **sk)
        mark("session opened: hub, probes prepared and announced")
        return out
    setattr(LiveSession, name, timed_open if name == "open" else timed_start)
    from textual.drivers.linux_driver import LinuxDriver
    write, seen = LinuxDriver.write, []
    def timed_write(self, data):
        write(self, data)
        seen.append(data)
        text = re.sub(r"\[[0-9;?<>=]*[a-zA-Z]", "", "".join(seen))
        if all(t in text for t in ("system.cpu", "system.disk", "system.net", "Quit")):
            mark("first frame written: panes mounted, laid out, drawn")
            json.dump(marks, open(out_path, "w"))
            os._exit(0)
    LinuxDriver.write = timed_write
    return run_app(*a, **k)
main.run_app = patched_run_app
sys.argv = ["probetop"]
main.entry()
"""
)


def phases(exe: str, repeat: int) -> list[tuple[str, float]]:
    """(phase, median seconds since the process started) of the passive
    dashboard's start-up; see PHASES_WRAPPER."""
    python = str(Path(exe).parent / "python")
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "phases.json"
        for _ in range(repeat + 1):  # the first one warms the caches
            out.unlink(missing_ok=True)
            command = [*state_env("phases", "warm", exe), python, "-c", PHASES_WRAPPER, str(out)]
            tmux("new-session", "-d", "-s", "p", "-x", "120", "-y", "40", shlex.join(command))
            deadline = time.monotonic() + TIMEOUT_S
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.1)  # the file written whole
            tmux("kill-server")
            if out.exists():
                runs.append(json.loads(out.read_text()))
    runs = runs[1:]
    names = list(runs[0]) if runs else []
    return [(n, statistics.median(r[n] for r in runs if n in r)) for n in names]


# Run as `python -c TRACE_WRAPPER OUT`: `probetop demo`, with each step
# noted (wall seconds since the process started, and the process's CPU
# seconds then): the first frame, each maker of the joining families, each
# probe started, its first sample published and drawn. It exits once every
# announced probe drew a first sample.
TRACE_WRAPPER = (
    r"""
import os, sys, time, json, re, threading
"""
    + WRAPPER_CLOCK
    + r"""
marks = []
lock = threading.Lock()
def mark(name):
    with lock:
        marks.append((name, time.perf_counter() - base, time.process_time()))
mark("python started, site imported")
import probetop.tui.fastpath as fastpath  # the console script's way in
from probetop.tui.run import codecache
codecache.install("main")
import probetop.tui.main as main
mark("CLI layer imported")
run_app = main.run_app
def patched_run_app(*a, **k):
    import probetop.tui.ui.app as app_module
    mark("Textual and the app imported")
    make_app = app_module.make_app
    def timed_make_app(*ma, **mk):
        app = make_app(*ma, **mk)
        mark("App constructed")
        return app
    app_module.make_app = timed_make_app
    from probetop.probes.core.hub import Hub
    from probetop.tui.ui.modes.live import LiveMode
    from probetop.tui.run.livesession import LiveSession
    start, begin = LiveMode.start, LiveSession.begin
    async def timed_start(self):
        mark("live mode started (after compose)")
        return await start(self)
    LiveMode.start = timed_start
    async def timed_begin(self, *ba, **bk):
        mark("session begins: recording/history, then the probes")
        return await begin(self, *ba, **bk)
    LiveSession.begin = timed_begin
    started, published, drawn, makers = set(), set(), set(), {}
    hub_start = Hub._start
    def timed_hub_start(self, probe):
        if probe.id not in started:
            started.add(probe.id)
            mark(f"probe started: {probe.id}")
        return hub_start(self, probe)
    Hub._start = timed_hub_start
    publish = Hub.publish
    def timed_publish(self, record):
        cls = type(record).__name__
        if cls == "Sample" and record.probe not in published:
            published.add(record.probe)
            mark(f"first sample published: {record.probe}")
        return publish(self, record)
    Hub.publish = timed_publish
    frame = LiveMode.frame
    def timed_frame(self):
        before = set(published)
        frame(self)
        for pid in sorted(before - drawn):
            drawn.add(pid)
            mark(f"first sample routed to its pane: {pid}")
        hub = self.hub
        with open(out_path + ".tmp", "w") as f:
            json.dump(marks + [["probes", sorted(hub.probes) if hub else []]], f)
        joined = makers and all(makers.values())
        if hub is not None and joined and drawn >= set(hub.probes):
            os.rename(out_path + ".tmp", out_path)
            codecache.save()
            os._exit(0)
    LiveMode.frame = timed_frame
    from textual.drivers.linux_driver import LinuxDriver
    write, seen = LinuxDriver.write, []
    def timed_write(self, data):
        write(self, data)
        if seen is None:
            return
        seen.append(data)
        text = re.sub(r"\x1b\[[0-9;?<>=]*[a-zA-Z]", "", "".join(seen))
        if all(t in text for t in ("system.cpu", "system.disk", "system.net", "Quit")):
            mark("first frame written")
            seen.clear()
            globals()["seen"] = None
    LinuxDriver.write = timed_write
    from probetop.tui import main as m
    make = m._Joining._make
    def timed_make(self, maker, deliver):
        name = getattr(maker, "args", (getattr(maker, "__name__", "?"),))[0]
        makers[name] = False
        mark(f"maker starts: {name}")
        out = make(self, maker, deliver)
        mark(f"maker done: {name}")
        makers[name] = True
        return out
    m._Joining._make = timed_make
    return run_app(*a, **k)
main.run_app = patched_run_app
sys.argv = ["probetop", "demo"]
fastpath.entry()
"""
)


def trace(build: str, exe: str, repeat: int) -> list[tuple[str, float, float]]:
    """(step, median wall s since start, median CPU s) of `probetop demo`'s
    start-up, warm; see TRACE_WRAPPER."""
    python = str(Path(exe).parent / "python")
    runs: list[dict[str, tuple[float, float]]] = []
    if not (cache_dir(f"trace-{build}", exe) / "numba-after-compile").is_dir():
        state_env(f"trace-{build}", "fresh", exe)  # runs `probetop compile` once
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.json"
        for _ in range(repeat + 1):  # the first one warms the caches
            out.unlink(missing_ok=True)
            command = [
                *state_env(f"trace-{build}", "warm", exe),
                # The demo's scratch directory (192 MiB, written from its
                # start) in ours, removed with it: the wrapper's os._exit
                # leaves it behind.
                f"TMPDIR={tmp}",
                python,
                "-c",
                TRACE_WRAPPER,
                str(out),
            ]
            tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", shlex.join(command))
            deadline = time.monotonic() + TIMEOUT_S
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)  # the file written whole
            tmux("kill-server")
            if out.exists():
                marks = [m for m in json.loads(out.read_text()) if len(m) == 3]
                runs.append(
                    {  # the first of each; no scratch path or port in a name
                        re.sub(r"/\S*/probetop-demo-\w+/|:\d+/", "/", n): (w, c)
                        for n, w, c in reversed(marks)
                    }
                )
    runs = runs[1:]
    names = sorted(
        {n for r in runs for n in r},
        key=lambda n: statistics.median(r[n][0] for r in runs if n in r),
    )
    return [
        (
            n,
            statistics.median(r[n][0] for r in runs if n in r),
            statistics.median(r[n][1] for r in runs if n in r),
        )
        for n in names
    ]


def version_s(env: list[str], exe: str) -> float:
    t0 = time.monotonic()
    subprocess.run([*env, exe, "--version"], capture_output=True, check=True)
    return time.monotonic() - t0


def heavy_imports(exe: str) -> list[str]:
    """Heavy modules loaded by building the passive dashboard (its app and
    panes, its probes' first reads), without showing it."""
    python = str(Path(exe).parent / "python")
    code = (
        "import sys\n"
        "from probetop.probes.system import passive_probes\n"
        "from probetop.tui.ui.app import make_app\n"
        "from probetop.tui.run.viewconfig import LiveView\n"
        "probes = passive_probes(1.0)\n"
        "[p.prepare() for p in probes]\n"
        "make_app(LiveView(probes=probes))\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def largest_imports(exe: str, top: int = 12) -> list[tuple[float, str]]:
    """(ms, module) of the dashboard path's largest imports, best of 3 runs."""
    python = str(Path(exe).parent / "python")
    best: dict[str, int] = {}
    for _ in range(3):
        err = subprocess.run(
            [python, "-X", "importtime", "-c", "import probetop.tui.main, probetop.tui.ui.app"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        for line in err.splitlines():
            m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)", line)
            if m and len(m[2]) <= 4:  # modules imported near the top of the tree
                name, cum = m[3], int(m[1])
                best[name] = min(cum, best.get(name, cum))
    ranked = sorted(((us / 1000.0, name) for name, us in best.items()), reverse=True)
    return ranked[:top]


def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:.2f} s ({min(values):.2f}-{max(values):.2f}, n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-demo", action="store_true")
    parser.add_argument("--no-setup", action="store_true", help="also measure without set-up")
    parser.add_argument("--probetop", default=PROBETOP)
    parser.add_argument("--reference", help="another build's probetop, alternated with ours")
    parser.add_argument(
        "--keep-compiled",
        action="store_true",
        help="reuse what an earlier run's `probetop compile` left for each build "
        "(minutes each on a loaded machine); only when the native loops did not change",
    )
    parser.add_argument("--phases", action="store_true", help="only: where the start-up goes")
    parser.add_argument("--trace", action="store_true", help="only: the demo's start-up, by step")
    add_figures_option(parser)
    args = parser.parse_args()
    builds = [("ours", args.probetop)] + ([("ref", args.reference)] if args.reference else [])
    if args.trace:
        for build, exe in builds:
            print(f"{build}: demo start-up, warm, median of {args.repeat} (s since start):")
            for name, wall, cpu in trace(build, exe, args.repeat):
                print(f"  {wall:6.3f}  cpu {cpu:6.3f}  {name}")
        return 0
    if args.phases:
        for build, exe in builds:
            print(f"{build}: passive dashboard start-up, median of {args.repeat} (s since start):")
            last = 0.0
            for name, at in phases(exe, args.repeat):
                print(f"  {at:6.3f}  (+{(at - last) * 1000:4.0f} ms)  {name}")
                last = at
        return 0
    runs = [("probetop", [], PASSIVE_TITLES)]
    if not args.no_demo:
        # The first frame holds the passive panes; the demo's probes join as
        # they are ready, and "every number" waits for all of their panes.
        runs.append(("demo", ["demo"], PASSIVE_TITLES))
    states = ["fresh", *(["no-setup"] if args.no_setup else []), "warm"]
    for build, _exe in builds:  # `probetop compile`'s result: made anew by this run
        if not args.keep_compiled:
            shutil.rmtree(cache_dir(build, _exe) / "numba-after-compile", ignore_errors=True)
        shutil.rmtree(cache_dir(build, _exe) / "warm" / "numba", ignore_errors=True)
    results: dict[tuple[str, str, str, str], list[float]] = {}

    def note(key: tuple[str, str, str, str], value: float | None) -> None:
        results.setdefault(key, [])
        if value is not None:
            results[key].append(value)

    for _ in range(args.repeat):
        for build, exe in builds:
            warm_env = state_env(build, "warm", exe)
            note((build, "--version", "warm", "wall"), version_s(warm_env, exe))
            for name, extra, titles in runs:
                for state in states:
                    env = state_env(build, state, exe)
                    if state == "warm":
                        # warms what it reads (the demo: until its numbers; the
                        # passive panes have no demo titles to wait 60 s for)
                        first_frame([*env, exe, *extra], titles, name == "demo")
                    frame, numbers = first_frame([*env, exe, *extra], titles, name == "demo")
                    note((build, name, state, "frame"), frame)
                    if name == "demo":
                        note((build, name, state, "numbers"), numbers)
    failed = False
    print(f"start-up in a 120x40 terminal (tmux), median (range) of {args.repeat}:")
    for (build, name, state, what), values in sorted(results.items()):
        target = TARGET_S.get((name, state, what))
        verdict = ""
        if target is not None and build == "ours":
            ok = bool(values) and statistics.median(values) <= target
            failed |= not ok
            verdict = f"  target <= {target:g} s: {'ok' if ok else 'MISSED'}"
        label = {"frame": "first frame", "numbers": "every number", "wall": "wall"}[what]
        print(f"  {build:<5} {name:<10} {state:<9} {label:<13} {fmt(values)}{verdict}")
        if build == "ours" and values:
            report(
                f"{name}, {state}",
                label,
                statistics.median(values),
                unit="s",
                goal=None if target is None else at_most(target, of="probetop"),
            )
    for build, exe in builds:
        heavy = heavy_imports(exe)
        print(f"{build}: heavy modules in the passive dashboard: {' '.join(heavy) or 'none'}")
        failed |= bool(heavy) and build == "ours"
    print("largest imports on the dashboard's path (ms, cumulative, best of 3):")
    for ms, name in largest_imports(args.probetop):
        print(f"  {ms:7.1f}  {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
