"""Remote view over SSH: bytes per second on the link, next to the TUI over ssh.

Issue 13's budget: a remote view (`probetop --remote HOST`, the passive
panes at 1 Hz) must carry fewer bytes over the SSH link than running the
dashboard itself over ssh (measured earlier: about 673 B/s at 120x40).

A real sshd on a free loopback port (tests/tui/sshd_fixture.py: throwaway
keys, private state directory) is the "remote host". Three ways to watch
the same passive panes, each in a real terminal (tmux, 120x40), one after
the other, ROUNDS times in alternation:

  view     probetop --remote ptest              (only recording lines travel)
  tui      ssh -t ptest probetop                (the dashboard over ssh)
  tui -C   ssh -C -t ptest probetop             (the same, ssh compression on)

For each, after --settle seconds (the view's first read of the history is
left out), the bytes the ssh client received from sshd over --window
seconds are read from the kernel (`ss -tin`, bytes_received of every
connection to the server's port). Prints B/s per way (median over rounds)
and the ratio view / tui.

Usage: .venv/bin/python benchmarks/remote_budget.py [--window 30] [--settle 30] [--rounds 2]
       [--command 'cpu --time 3600' --command 'icmp 127.0.0.1 --time 3600']
       (the defaults: two probes, each beside the host's panes; every command
       and way alternate within each round)

Issue 27's budget: for each command, the view at most 0.5 x `ssh -C -t`.
$PROBETOP_REMOTE_BATCH is passed on to the view (its batch period; the
default is the view's own).

--churn (root): devices come and go all along, as other processes make
them on a busy host: every 2 s a veth pair (a new name each time) is added
or removed and a loop device (over a file in the benchmark's temporary
directory) attached or detached; at most 2000 steps, all removed at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "tui"))
from figures import add_figures_option, at_most, report
from sshd_fixture import Sshd, start_sshd

TMUX = f"ptremote-bench-{os.getpid()}"


def received(port: int) -> tuple[int, int]:
    """Bytes and segments received by every client connection to ``port`` (ss -tin)."""
    out = subprocess.run(
        ["ss", "-tinH", f"dport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    nbytes = sum(int(m) for m in re.findall(r"bytes_received:(\d+)", out))
    segs = sum(int(m) for m in re.findall(r"segs_in:(\d+)", out))
    return nbytes, segs


def tmux(*args: str) -> None:
    subprocess.run(["tmux", "-L", TMUX, *args], capture_output=True, timeout=10)


class NotShown(RuntimeError):
    """The way never showed its panes with numbers: no figure, rather than a
    rate of a link that carried nothing (a view that failed costs 0 B/s)."""


def screen() -> str:
    out = subprocess.run(
        ["tmux", "-L", TMUX, "capture-pane", "-p", "-t", "b"],
        capture_output=True, text=True, timeout=10,
    )  # fmt: skip
    return out.stdout


def showing(text: str, probe: str) -> bool:
    """Every pane of the way is on screen with a measured value: the probe's
    pane (if any) and the host's three, none still waiting for its first."""
    titles = ("system.cpu", "system.disk", "system.net", *([f" {probe} "] if probe else []))
    return all(t in text for t in titles) and "waiting for the first" not in text


def measure(
    command: str,
    probe: str,
    env: dict[str, str],
    port: int,
    settle: float,
    window: float,
    ready_s: float,
) -> tuple[float, float]:
    """B/s and segments/s received from sshd while ``command`` runs in a
    120x40 terminal, from ``settle`` s after its panes first show numbers
    (within ``ready_s`` s, else ``NotShown``) for ``window`` s; the panes
    must still show at the end."""
    exports = " ".join(f"{k}='{v}'" for k, v in env.items())
    tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "b",
         f"env {exports} TERM=xterm-256color {command}")  # fmt: skip
    try:
        deadline = time.monotonic() + ready_s
        while not showing(screen(), probe):
            if time.monotonic() > deadline:
                raise NotShown(f"no panes with numbers within {ready_s:g} s:\n{screen()}")
            time.sleep(0.5)
        time.sleep(settle)
        start, start_segs = received(port)
        time.sleep(window)
        end, end_segs = received(port)
        if not showing(screen(), probe):
            raise NotShown(f"the panes were gone at the end of the window:\n{screen()}")
        return (end - start) / window, (end_segs - start_segs) / window
    finally:
        tmux("kill-server")
        time.sleep(1.0)


class Churn(threading.Thread):
    """Devices coming and going (see --churn); ``stop()`` removes them."""

    STEP_S = 2.0
    MAX_STEPS = 2000

    def __init__(self, base: Path) -> None:
        super().__init__(daemon=True)
        self.image = base / "churn.img"
        self.image.write_bytes(b"\0" * (1 << 20))
        self.prefix = f"ptrb{os.getpid() % 10000}"
        self.done = threading.Event()
        self.steps = 0

    def run(self) -> None:
        while self.steps < self.MAX_STEPS and not self.done.wait(self.STEP_S):
            n = self.steps
            if n % 2 == 0:
                self._run("ip", "link", "add", f"{self.prefix}v{n}", "type", "veth", "peer",
                          "name", f"{self.prefix}p{n}")  # fmt: skip
                self._run("losetup", "-f", str(self.image))
            else:
                self._run("ip", "link", "del", f"{self.prefix}v{n - 1}")
                for loop in self._loops():
                    self._run("losetup", "-d", loop)
            self.steps += 1

    def _loops(self) -> list[str]:
        out = subprocess.run(["losetup", "-j", str(self.image)], capture_output=True, text=True)
        return [row.split(":", 1)[0] for row in out.stdout.splitlines() if row]

    @staticmethod
    def _run(*argv: str) -> None:
        subprocess.run(argv, capture_output=True, timeout=30)

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=60)
        for loop in self._loops():
            self._run("losetup", "-d", loop)
        out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        for name in re.findall(rf"^\d+: ({self.prefix}v\d+)@", out, re.M):
            self._run("ip", "link", "del", name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=30.0)
    # After the panes first show numbers: the view's history and its
    # probes' schemas travel once at the start, and its first live batches
    # follow them; the window is the steady cost.
    ap.add_argument("--settle", type=float, default=15.0)
    # A view starts three probetop processes on the far side (the session,
    # ls, follow): on a loaded machine that took more than 30 s.
    ap.add_argument("--ready", type=float, default=180.0, help="give up on a way after S s")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--command",
        action="append",
        help="a probetop command watched three ways (repeat for several; default: cpu "
        "and icmp 127.0.0.1, which a local dashboard shows beside system.cpu, disk and "
        "net); '' for the passive panes",
    )
    ap.add_argument(
        "--churn",
        action="store_true",
        help="devices come and go all along (root): every 4 s a veth pair and a loop device "
        "come, 2 s later they go",
    )
    add_figures_option(ap)
    args = ap.parse_args()
    if args.churn and (os.geteuid() != 0 or shutil.which("losetup") is None):
        print("--churn needs root, ip and losetup")
        return 2
    commands = args.command or ["cpu --time 3600", "icmp 127.0.0.1 --time 3600"]
    if shutil.which("tmux") is None or shutil.which("ss") is None:
        print("needs tmux and ss (iproute2)")
        return 1
    base = Path(tempfile.mkdtemp(prefix="ptrb-", dir="/tmp"))
    (base / "keys").mkdir()
    (base / "run").mkdir(mode=0o700)
    try:
        sshd: Sshd = start_sshd(base / "keys", base / "far", base / "run")
    except BaseException:  # no server: leave no keys behind either
        shutil.rmtree(base, ignore_errors=True)
        raise
    env = {k: sshd.env[k] for k in ("PROBETOP_SSH", "PROBETOP_REMOTE")}
    if os.environ.get("PROBETOP_REMOTE_BATCH"):
        env["PROBETOP_REMOTE_BATCH"] = os.environ["PROBETOP_REMOTE_BATCH"]
    env["XDG_STATE_HOME"] = str(base / "near")
    churn = Churn(base) if args.churn else None
    if churn is not None:
        churn.start()
    py = sys.executable
    ssh = f"ssh -F {sshd.config}"
    remote = sshd.env["PROBETOP_REMOTE"]
    ways = {
        "view": f"{py} -m probetop.tui.main --remote ptest {{}}",
        "tui": f"{ssh} -t ptest {remote} {{}}",
        "tui -C": f"{ssh} -C -t ptest {remote} {{}}",
    }
    results: dict[tuple[str, str], list[float]] = {(c, w): [] for c in commands for w in ways}
    failed = False
    try:
        for r in range(args.rounds):
            for cmd in commands:
                for way, command in ways.items():
                    probe = cmd.split()[0] if cmd else ""
                    try:
                        rate, segs = measure(
                            command.format(cmd), probe, env, sshd.port, args.settle,
                            args.window, args.ready,
                        )  # fmt: skip
                    except NotShown as e:
                        print(f"round {r + 1}  {cmd[:28]:28s} {way:7s} not measured: {e}")
                        failed = True
                        continue
                    results[cmd, way].append(rate)
                    print(
                        f"round {r + 1}  {cmd[:28]:28s} {way:7s} {rate:8.0f} B/s  "
                        f"{segs:5.1f} segments/s",
                        flush=True,
                    )
    finally:  # the sessions the views started keep running on the far side: stop them
        if churn is not None:
            churn.stop()
        far = dict(os.environ, XDG_STATE_HOME=str(base / "far"), XDG_RUNTIME_DIR=str(base / "run"))
        for meta in (base / "far" / "probetop").glob("*.session.json"):
            subprocess.run([py, "-m", "probetop.tui.main", "stop", meta.name.split(".")[0]],
                           env=far, capture_output=True, timeout=60)  # fmt: skip
        sshd.stop()
        shutil.rmtree(base, ignore_errors=True)
    med = {key: statistics.median(v) for key, v in results.items() if v}
    load = os.getloadavg()[0]
    churned = f", {churn.steps} devices came or went" if churn is not None else ""
    print(f"\nmedian over {args.rounds} rounds of {args.window:g} s (load average {load:.1f}"
          f"{churned}):")  # fmt: skip
    for cmd in commands:
        print(f"  {cmd or '(the passive panes)'}")
        if any((cmd, way) not in med for way in ways):
            print("    not measured: a way never showed its panes (above)")
            continue
        for way in ways:
            print(f"    {way:7s} {med[cmd, way]:8.0f} B/s")
        case = f"probetop {cmd or '(passive panes)'}, 120x40, bytes over ssh" + (
            ", devices churning" if churn is not None else ""
        )
        for ref, tool, goal in (
            ("tui", "the dashboard over ssh -t", at_most(1.0)),
            ("tui -C", "the dashboard over ssh -C -t", at_most(0.5) if cmd else None),
        ):
            if med[cmd, ref]:
                print(f"    view / {ref:6s} = {med[cmd, 'view'] / med[cmd, ref]:.2f}")
                report(
                    case,
                    "received B/s",
                    med[cmd, "view"],
                    med[cmd, ref],
                    unit="B/s",
                    reference_tool=tool,
                    goal=goal,
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
