#!/usr/bin/env python3
"""The dashboard at scale: is it still responsive, and what does it cost?

Three scenarios (issue 15, "Scale"), each shown at 120x40 in a detached tmux
pane (a private tmux server) with the passive panes beside it:

- ``http``: one HTTP pane sampling 100 URLs every second, served by a
  ``python -m http.server`` this script starts on 127.0.0.1;
- ``icmp``: 50 ICMP panes, 127.0.0.1 .. 127.0.0.50 at 10 requests/s each
  (loopback only; root or an ICMP socket permission);
- ``disks``: 16 loop devices over files in /dev/shm, each read a few times a
  second by a helper process (O_DIRECT, 4 KiB), so the passive disk pane
  shows 16 busy disks (root; the devices and files are removed after).

For each, after ``--settle`` seconds it measures for ``--seconds``: the
dashboard's main thread (Textual, the event loop: what must stay under 5 %
of a core) and its whole process tree (the probes' threads too), in % of one
core (schedstat); then the key answer time: ``p`` (pause the display) is
sent with ``tmux send-keys`` and the pane polled with ``capture-pane`` every
5 ms until its status line shows (or stops showing) "DISPLAY PAUSED";
``--keys`` presses, median and maximum. Budget: key answered within 100 ms,
main thread < 5 %.

usage: benchmarks/dashboard_scale.py [--only http,icmp,disks] [--seconds 20] [--settle 8]
       [--keys 6] [--probetop PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from figures import add_figures_option, at_most, report

REPO = Path(__file__).resolve().parent.parent
PROBETOP = str(REPO / ".venv" / "bin" / "probetop")
SOCKET = f"probetop-scale-{os.getpid()}"
KEY_BUDGET_S = 0.100
MAIN_BUDGET_PCT = 5.0
HTTP_URLS = 100
ICMP_TARGETS = 50
ICMP_RATE = 10
DISKS = 16
DISK_MB = 16
DISK_IOPS = 5  # reads per second per loop device by the helper
RUN_LIMIT_S = 300  # every helper and dashboard here ends by itself after this


@dataclass(frozen=True)
class Figures:
    main_pct: float
    tree_pct: float
    keys_ms: list[float]


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def cpu_ns(pid: int, only_main: bool = False) -> int:
    tids = [pid] if only_main else [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    total = 0
    for tid in tids:
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
    return total


def tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                kids.setdefault(int(stat[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def dashboard_pid(pane: int) -> int:
    """The pane's process, or the dashboard a live probetop forked from it."""
    cmdline = Path(f"/proc/{pane}/cmdline").read_bytes()
    for pid in tree(pane)[1:]:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline:
                return pid
    return pane


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", "s")


def wait_screen(condition: str, present: bool, timeout: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if (condition in screen()) == present:
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


def key_times(presses: int) -> list[float]:
    """ms from ``send-keys p`` until the status line changed, per press."""
    out = []
    for i in range(presses):
        paused = i % 2 == 0  # p toggles: this press pauses when i is even
        t0 = time.monotonic()
        tmux("send-keys", "-t", "s", "p")
        took = wait_screen("DISPLAY PAUSED", present=paused, timeout=5.0)
        out.append((time.monotonic() - t0) * 1000.0 if took is not None else 5000.0)
        time.sleep(0.3)  # a frame or so between presses
    if presses % 2:
        tmux("send-keys", "-t", "s", "p")  # leave it unpaused
    return out


def measure(command: list[str], ready: str, seconds: float, settle: float, keys: int) -> Figures:
    for _ in range(50):  # a previous private server still going away
        if subprocess.run(["tmux", "-L", SOCKET, "list-sessions"], capture_output=True).returncode:
            break
        time.sleep(0.1)
    tmux("new-session", "-d", "-s", "s", "-x", "120", "-y", "40", "exec " + shlex.join(command))
    try:
        if wait_screen(ready, present=True, timeout=60.0) is None:
            raise RuntimeError(f"the dashboard never showed {ready!r}:\n{screen()}")
        time.sleep(settle)
        pane = int(tmux("list-panes", "-t", "s", "-F", "#{pane_pid}").strip())
        main = dashboard_pid(pane)
        pids = tree(pane)
        m0, t0, w0 = cpu_ns(main, True), sum(cpu_ns(p) for p in pids), time.monotonic()
        time.sleep(seconds)
        m1, t1, w1 = cpu_ns(main, True), sum(cpu_ns(p) for p in pids), time.monotonic()
        presses = key_times(keys)
        wall = w1 - w0
        return Figures((m1 - m0) / 1e9 / wall * 100, (t1 - t0) / 1e9 / wall * 100, presses)
    finally:
        tmux("send-keys", "-t", "s", "q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and tmux("list-sessions"):
            time.sleep(0.1)
        tmux("kill-server")


# -- scenarios ---------------------------------------------------------------
@contextlib.contextmanager
def http_targets() -> Iterator[list[str]]:
    """100 URLs on a local http.server (a process of its own)."""
    root = Path(tempfile.mkdtemp(prefix="probetop-scale-"))
    for i in range(HTTP_URLS):
        (root / f"u{i}.txt").write_text(f"url {i}\n" * 20)
    with socketserver_port() as port:
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            probe = subprocess.run(
                ["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/u0.txt"],
                check=False,
            )
            if probe.returncode == 0:
                break
            time.sleep(0.1)
        yield [f"http://127.0.0.1:{port}/u{i}.txt" for i in range(HTTP_URLS)]
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def socketserver_port() -> Iterator[int]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield port


@contextlib.contextmanager
def loop_disks() -> Iterator[list[str]]:
    """16 loop devices over /dev/shm files, each read DISK_IOPS times a second."""
    files, devices = [], []
    reader = None
    try:
        for i in range(DISKS):
            path = Path(f"/dev/shm/probetop-scale-{os.getpid()}-{i}.img")
            with path.open("wb") as f:
                f.truncate(DISK_MB << 20)
            files.append(path)
            dev = subprocess.run(
                ["losetup", "--find", "--show", "--direct-io=on", str(path)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            devices.append(dev)
        code = (
            "import os, sys, time, mmap\n"
            "devs = sys.argv[1:]\n"
            "fds = [os.open(d, os.O_RDONLY | os.O_DIRECT) for d in devs]\n"
            "buf = mmap.mmap(-1, 4096)\n"
            f"end = time.monotonic() + {RUN_LIMIT_S}\n"
            "i = 0\n"
            "while time.monotonic() < end:\n"
            "    for fd in fds:\n"
            f"        os.preadv(fd, [buf], (i * 4096) % ({DISK_MB} << 20))\n"
            "    i += 1\n"
            f"    time.sleep({1.0 / DISK_IOPS})\n"
        )
        reader = subprocess.Popen([sys.executable, "-c", code, *devices])
        yield devices
    finally:
        if reader is not None:
            reader.terminate()
            reader.wait(timeout=10)
        for dev in devices:
            subprocess.run(["losetup", "-d", dev], check=False)
        for path in files:
            path.unlink(missing_ok=True)


def launcher(probetop: str, lines: list[str]) -> list[str]:
    """A dashboard of the passive panes plus one probe per command line
    (what typing each line at the ``a`` prompt would add), as a command."""
    python = str(Path(probetop).parent / "python")
    code = (
        "import sys\n"
        "from probetop.probes.system import passive_probes\n"
        "from probetop.tui.cli.parser import parse_command_line\n"
        "from probetop.tui.run.viewconfig import Display, LiveView\n"
        "from probetop.tui.main import run_app\n"
        "probes = list(passive_probes(1.0))\n"
        "for line in sys.argv[1:]:\n"
        "    module, plan = parse_command_line(line)\n"
        "    probes += module.build_probes(plan)\n"
        f"config = LiveView(probes, Display(interval_s=1.0), duration_s={RUN_LIMIT_S})\n"
        "sys.exit(run_app(config))\n"
    )
    return [python, "-c", code, *lines]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="http,icmp,disks")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=8.0)
    parser.add_argument("--keys", type=int, default=6)
    parser.add_argument("--probetop", default=PROBETOP)
    add_figures_option(parser)
    args = parser.parse_args()
    chosen = args.only.split(",")
    results: dict[str, Figures | str] = {}
    if "http" in chosen:
        with http_targets() as urls:
            line = shlex.join(["http", *urls, "--interval", "1", "--watch"])
            command = launcher(args.probetop, [line])
            results["http: 100 URLs at 1 Hz"] = measure(
                command, "+99", args.seconds, args.settle, args.keys
            )
    if "icmp" in chosen:
        # 53 panes do not fit 40 rows: the compact list shows the first ones
        # (all the probes are announced together at start).
        lines = [f"icmp 127.0.0.{i} --rate {ICMP_RATE}" for i in range(1, ICMP_TARGETS + 1)]
        command = launcher(args.probetop, lines)
        results["icmp: 50 targets x 10 pps"] = measure(
            command, "127.0.0.2 ", args.seconds, args.settle, args.keys
        )
    if "disks" in chosen:
        if os.geteuid() != 0 or shutil.which("losetup") is None:
            results["disks: 16 loop devices"] = "skipped: needs root and losetup"
        else:
            with loop_disks() as devices:
                last = Path(devices[-1]).name
                results["disks: 16 loop devices"] = measure(
                    [args.probetop], last, args.seconds, args.settle, args.keys
                )
    print(
        f"120x40, {args.seconds:g} s after {args.settle:g} s; budget: main thread < "
        f"{MAIN_BUDGET_PCT:g} % of a core, key answered < {KEY_BUDGET_S * 1000:g} ms"
    )
    failed = False
    for name, fig in results.items():
        if isinstance(fig, str):
            print(f"{name:<28} {fig}")
            continue
        med, worst = statistics.median(fig.keys_ms), max(fig.keys_ms)
        ok = fig.main_pct < MAIN_BUDGET_PCT and worst < KEY_BUDGET_S * 1000
        failed |= not ok
        print(
            f"{name:<28} main {fig.main_pct:5.2f} %  tree {fig.tree_pct:6.2f} %  "
            f"key {med:5.0f} ms median, {worst:5.0f} ms max ({len(fig.keys_ms)} presses)  "
            f"{'ok' if ok else 'OVER'}"
        )
        report(
            name,
            "slowest key answered",
            worst,
            unit="ms",
            goal=at_most(KEY_BUDGET_S * 1000, of="probetop"),
        )
        report(
            name,
            "main thread CPU",
            fig.main_pct,
            unit="% of a core",
            goal=at_most(MAIN_BUDGET_PCT, of="probetop"),
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
