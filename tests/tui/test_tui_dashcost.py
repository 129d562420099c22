"""What makes the dashboard cheap must not change what it shows: cached
lines equal fresh ones after live frames and a theme switch, the quiet
input thread still answers keys (a real terminal), and the passive probes'
/proc readers agree with psutil."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from probetop.probes.system import procfs
from probetop.tui.ui.widgets.linewidget import LineWidget
from tui_fixtures import has_samples, live_app, wait_for

REPO = Path(__file__).resolve().parents[2]


async def test_cached_lines_are_what_render_line_draws_now() -> None:
    app = live_app(0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app, 4))
        for theme in (None, "probetop-light"):
            if theme:
                app.theme = theme
            await pilot.pause(0.5)  # frames after the switch
            widgets = [w for w in app.screen.walk_children() if isinstance(w, LineWidget)]
            assert widgets and all(w.is_plain() for w in widgets)
            checked = 0
            for widget in widgets:
                for y, strip in dict(widget._strips).items():
                    assert strip == widget.render_line(y), (type(widget).__name__, y)
                    checked += 1
            assert checked >= 5  # the rows drawn by the frames above


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_input_thread_sleeps_yet_answers_keys_in_a_real_terminal() -> None:
    server = f"probetop-test-{os.getpid()}"
    exe = str(Path(sys.executable).parent / "probetop")

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True).stdout

    tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "exec " + shlex.join([exe]))
    try:
        deadline = time.monotonic() + 60
        while "system.cpu" not in tmux("capture-pane", "-p", "-t", "t"):
            assert time.monotonic() < deadline, "the dashboard never showed"
            time.sleep(0.05)
        pane = int(tmux("list-panes", "-t", "t", "-F", "#{pane_pid}"))
        # The dashboard is the process the pane's own one forked (a waiter).
        child = next(iter(psutil.Process(pane).children()), psutil.Process(pane))

        # Wake-ups of every thread but the main one: Textual's input thread
        # polls 10 times a second; ours sleeps until a key comes.
        def others() -> int:
            total = 0
            for t in Path(f"/proc/{child.pid}/task").iterdir():
                if int(t.name) == child.pid:
                    continue
                for line in (t / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
            return total

        time.sleep(3.0)  # past the start-up's first full paint
        before = others()
        time.sleep(3.0)
        woke = others() - before
        assert woke < 30, woke  # ours: ~18 (writer, workers); polling alone added 30
        tmux("send-keys", "-t", "t", "?")  # a key: the help screen opens
        deadline = time.monotonic() + 30
        while "Keys" not in tmux("capture-pane", "-p", "-t", "t"):
            assert time.monotonic() < deadline, "no answer to a key"
            time.sleep(0.02)
        tmux("send-keys", "-t", "t", "Escape")  # a lone ESC: the parser's own timeout
        deadline = time.monotonic() + 30
        while "Keys" in tmux("capture-pane", "-p", "-t", "t"):
            assert time.monotonic() < deadline, "ESC did not close the help"
            time.sleep(0.02)
        tmux("send-keys", "-t", "t", "q")
        deadline = time.monotonic() + 5
        while tmux("list-sessions"):
            assert time.monotonic() < deadline, "q did not quit"
            time.sleep(0.05)
    finally:
        tmux("kill-server")


def test_proc_readers_agree_with_psutil() -> None:
    ours, theirs = procfs.cpu_ticks(), psutil.cpu_times(percpu=True)
    assert sorted(ours) == list(range(len(theirs)))
    hz = os.sysconf("SC_CLK_TCK")
    for cpu, ticks in ours.items():
        assert abs(ticks.idle / hz - theirs[cpu].idle) < 2.0  # read a moment apart
    disks, pdisks = procfs.disk_counters(), psutil.disk_io_counters(perdisk=True)
    assert set(disks) == set(pdisks)
    for name, d in disks.items():
        assert d.read_bytes <= pdisks[name].read_bytes + 10**9
        assert d.read_bytes % procfs.SECTOR_BYTES == 0
    nics, pnics = procfs.nic_counters(), psutil.net_io_counters(pernic=True)
    assert set(nics) == set(pnics)
    assert nics["lo"].packets_recv <= pnics["lo"].packets_recv + 10**6
    freq = procfs.CpuFreq().read()
    assert not freq or all(mhz > 0 for mhz in freq.values())


def test_proc_file_grows_its_buffer_and_counters_never_go_negative(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 20_000)  # more than the first 8 KiB read
    reader = procfs.ProcFile(str(big))
    assert len(reader.read()) == 20_000
    big.write_bytes(b"y" * 10)
    assert reader.read() == b"y" * 10  # re-read from the start each time
    reader.close()
    assert procfs.counter_delta(15, 10) == 5
    assert procfs.counter_delta(3, 4_000_000_000) == 3  # restarted or wrapped: no spike


async def test_compact_list_of_many_panes_keeps_status_and_selection_in_view() -> None:
    from probetop.probes.core.sample import Announce
    from probetop.tui.run.viewconfig import LiveView
    from probetop.tui.ui.app import make_app
    from tui_fixtures import screen_text

    info = {"kind": "fake", "params": {}, "metrics": [{"name": "ops", "unit": "op/s"}]}
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(100, 30)) as pilot:
        app.route([Announce(f"fake:{i}", 0, {**info, "id": f"fake:{i}"}) for i in range(50)])
        await pilot.pause(0.3)
        assert app.compact
        room = 30 - 2 - 8  # chrome rows, the selected pane's least share
        assert 0 < len(app.index.lines) <= room
        assert screen_text(app).splitlines()[0].startswith("probetop")  # not scrolled away
        for _ in range(40):  # tab far down the list: the selection stays listed
            await pilot.press("tab")
        await pilot.pause(0.2)
        assert any(line.startswith("▸") for line in app.index.lines)
        assert screen_text(app).splitlines()[0].startswith("probetop")


async def test_pane_border_served_from_cache_follows_focus() -> None:
    from textual.geometry import Region

    app = live_app(0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app, 2))
        first, second = list(app.panes.values())[:2]
        top = Region(0, 0, first.outer_size.width, 1)
        first.focus()
        await pilot.pause(0.3)
        focused = first.render_lines(top)[0]
        second.focus()  # the first pane's border colour changes back
        await pilot.pause(0.3)
        blurred = first.render_lines(top)[0]
        assert blurred != focused
        assert blurred == first._styles_cache.render_widget(first, top)[0]  # Textual's path
