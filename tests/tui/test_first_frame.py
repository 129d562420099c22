"""What the passive dashboard and ``probetop demo`` have done by their first
frame (issue 28): the frame is drawn from the probes' announcements, before
any probe runs, and with none of the libraries only probes, recordings,
exporters or the demo's targets need.

The dashboard runs in a real pseudo-terminal; a wrapper notes, at the first
write that completes the frame (the passive panes' titles and the footer),
which modules are loaded and whether the session has begun (probes started,
recording opened), whether the stylesheet was parsed a second time and
which subtrees were styled again, then ends the process. No timing is asserted
(benchmarks/startup.py measures the time).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

# Libraries a passive dashboard's first frame never needs: the probe
# families' (numba, numpy, scapy, pycurl), the recording's (its writer:
# orjson, zstandard, psutil for the host facts), the exporter's, the charts'.
HEAVY = (
    "numba",
    "llvmlite",
    "numpy",
    "scapy",
    "pycurl",
    "plotext",
    "prometheus_client",
    "psutil",
    "zstandard",
    "orjson",
    "msgspec",
)
# probetop modules that only a recording, a replay or another family loads.
NOT_YET = (
    "probetop.probes.record.writer",
    "probetop.probes.record.codec",
    "probetop.probes.record.reader",
    "probetop.probes.record.hostinfo",
    "probetop.probes.cpu",
    "probetop.probes.mem",
    "probetop.probes.disk",
    "probetop.probes.icmp",
    "probetop.probes.http",
    "probetop.tui.metrics.live",
)
# What only the demo's targets (its HTTP server, made after the first frame
# with the probes that join) load: ~10 ms of CPU a start when the demo's
# command module imported them up front.
TARGETS_ONLY = (
    "probetop.tui.run.demo_targets",
    "http.server",
    "http.client",
    "socketserver",
    "email",
)

WRAPPER = r"""
import json, os, re, sys
out = sys.argv[1]
from probetop.tui.run.livesession import LiveSession
begun = []
begin = LiveSession.begin
async def noted_begin(self, *a, **k):
    begun.append(True)
    return await begin(self, *a, **k)
LiveSession.begin = noted_begin
from textual.app import App
reparsed = []
refresh_css = App.refresh_css
def noted_refresh_css(self, *a, **k):
    reparsed.append(True)
    return refresh_css(self, *a, **k)
App.refresh_css = noted_refresh_css
from textual.dom import DOMNode
restyled = []
update_node_styles = DOMNode.update_node_styles
def noted_update_node_styles(self, *a, **k):
    restyled.append([str(self.id), sys._getframe(1).f_code.co_name])
    return update_node_styles(self, *a, **k)
DOMNode.update_node_styles = noted_update_node_styles
from textual.drivers.linux_driver import LinuxDriver
write, seen = LinuxDriver.write, []
def first_frame(self, data):
    write(self, data)
    seen.append(data)
    text = re.sub(r"\x1b\[[0-9;?<>=]*[a-zA-Z]", "", "".join(seen))
    if all(t in text for t in ("system.cpu", "system.disk", "system.net", "Quit")):
        json.dump(
            {"modules": sorted(sys.modules), "begun": bool(begun), "reparsed": len(reparsed),
             "restyled": restyled},
            open(out, "w"),
        )
        os._exit(0)
LinuxDriver.write = first_frame
sys.argv = ["probetop", *sys.argv[2:]]
from probetop.tui.main import entry
entry()
"""


def _first_frame_state(tmp_path: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "first-frame.json"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    # TMPDIR: the demo's scratch directory, which its early start makes
    # before the first frame, stays in tmp_path (the wrapper's os._exit
    # leaves it behind).
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40", TMPDIR=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, str(out), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
            try:  # keep the terminal drained: a full pty would block the app
                os.set_blocking(master, False)
                os.read(master, 65536)
            except (BlockingIOError, OSError):
                time.sleep(0.02)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert out.exists(), "the dashboard drew no first frame"
    state: dict[str, object] = json.loads(out.read_text())
    return state


@pytest.mark.parametrize("args", [(), ("demo",)], ids=["passive", "demo"])
def test_the_first_frame_comes_before_any_probe_runs_and_loads_nothing_heavy(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    state = _first_frame_state(tmp_path, *args)
    modules = set(state["modules"])  # type: ignore[arg-type]
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], heavy
    early = sorted(m for m in modules if m.startswith(NOT_YET))
    assert early == [], early
    targets = sorted(m for m in modules if m.split(".")[0] in TARGETS_ONLY or m in TARGETS_ONLY)
    assert targets == [], targets
    assert state["begun"] is False, "probes or the recording started before the first frame"
    # The theme's variables are in the stylesheet before its first parse: no
    # second parse of every rule queued by the theme's watcher (~10 ms).
    assert state["reparsed"] == 0, "the stylesheet was parsed again before the first frame"
    # The panes' box is never styled again as a whole before the first frame:
    # it is born with the class of its first layout, and the focus goes to
    # a pane, not to the box first (each would match the rules over every pane).
    boxes = [name for name, _why in state["restyled"]]  # type: ignore[attr-defined]
    assert "panes" not in boxes, state["restyled"]
    # The demo's scratch directory is made, and its data files' layout
    # started, before Textual's import (tui/run/demo_scratch.py: a thread at
    # a lower priority, so no file is asserted here; test_demo_scratch.py
    # holds the files whole before any maker runs), not after the first frame.
    scratch = list(tmp_path.glob("probetop-demo-*"))
    if args:
        assert len(scratch) == 1, scratch
    else:
        assert scratch == []
    for path in scratch:
        shutil.rmtree(path)
