"""A replay that opens on the head of a long recording and reads the rest
while it shows it: the player grows, nothing shown is wrong, seeking waits
for the end of the reading, and a bad line found late ends the dashboard with
the same message and exit code as one found before it opened (a real
terminal, tmux)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from file_size import text_of
from probetop.probes.record import RecordingError, load_session
from probetop.probes.record.reader import STEP_BYTES, SessionLoader
from probetop.tui.run.viewconfig import ReplayView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.replay_clock import ReplayPlayer
from tui_fixtures import DEMO_FILE, wait_for

COPIES = 16  # the 16 s demo recording repeated: 4.3 min, five 256 KiB blocks


def long_recording(path: Path, bad_line_from_end: int | None = None) -> int:
    """The demo recording repeated COPIES times, time stamps shifted; one line
    replaced by a bad one when asked. Its number of lines."""
    rows = DEMO_FILE.read_bytes().splitlines()
    header, body, footer = rows[0], rows[1:-1], json.loads(rows[-1])
    out = [header]
    for copy in range(COPIES):
        for row in body:
            line = json.loads(row)
            if copy and line["type"] == "probe":
                continue
            line["t"] = round(line["t"] + 16.5 * copy, 6)
            out.append(json.dumps(line, separators=(",", ":")).encode())
    footer["duration_s"] = 16.5 * COPIES
    out.append(json.dumps(footer, separators=(",", ":")).encode())
    if bad_line_from_end is not None:
        out[-bad_line_from_end] = b'{"type":"sample","probe":"cpu","t":"late"}'
    path.write_bytes(b"\n".join(out) + b"\n")
    return len(out)


def test_the_player_grows_and_is_not_at_its_end_while_loading(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    long_recording(path)
    with SessionLoader(path) as loader:
        loader.step(100_000)
        session = loader.session
        player = ReplayPlayer(session.records(), session.duration_s)
        player.loading = True
        player.set_speed(float("inf"))
        head = len(player.records)
        delivered = player.advance(1.0)
        assert len(delivered) == head and not player.at_end
        assert player.seek(player.duration_s)[1] == []  # nothing beyond what is read
        have = len(session.lines)
        loader.finish()
        player.grow(session.lines[have:])
        player.loaded(session.duration_s)
    delivered += player.advance(1.0)
    while not player.at_end:
        delivered += player.advance(1.0)
    whole = load_session(path)
    assert [r for _t, r in whole.records()] == delivered
    assert player.duration_s == whole.duration_s == 16.5 * COPIES


class HeldLoader(SessionLoader):
    """A loader whose steps read nothing while ``held``: the test looks at the
    dashboard while the reading is certainly not over. (Free, the app's reader
    got the whole file before the test's first look on a loaded machine:
    Textual's start-up waits let the event loop run its steps.)"""

    held = False

    def step(self, nbytes: int = STEP_BYTES) -> int:
        if self.held:
            time.sleep(0.001)  # the app's reader calls again at once: no busy loop
            return 0
        return super().step(nbytes)


async def test_the_dashboard_opens_on_the_head_and_reads_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    long_recording(path)
    loader = HeldLoader(path)
    loader.step(100_000)
    loader.held = True
    app = make_app(ReplayView(loader.session, speed=math.inf, loader=loader))
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.player is not None
        assert app.player.loading and "/ reading..." in app.status_bar.text
        await app.action_seek_to(-1)  # end, while reading: refused, said
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert any("still reading the recording" in m for m in notes)
        assert not loader.done and not app.player.at_end
        loader.held = False
        assert await wait_for(pilot, lambda: app.player is not None and app.player.at_end)
        assert loader.done and "ended max" in app.status_bar.text
        assert "04:24 / 04:24" in app.status_bar.text
        seen = app.panes["cpu"].samples_seen
        assert seen == len(load_session(path).samples("cpu"))
        await pilot.press("space", "home")  # once read, seeking works (paused: it stays)
        await pilot.pause()
        await pilot.pause()
        assert app.panes["cpu"].samples_seen < seen


def _tmux(socket: str, *args: str) -> str:
    out = subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=10)
    return out.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_bad_line_found_after_the_first_frame_is_reported_as_before(tmp_path: Path) -> None:
    """In a real terminal: the dashboard opened on the head, the bad line near
    the end ends it, and the user gets load_session's message, exit 2."""
    path = tmp_path / "bad.jsonl"
    n = long_recording(path, bad_line_from_end=20)
    with pytest.raises(RecordingError) as caught:
        load_session(path)
    expected = f"probetop: error: {caught.value}"
    assert f": line {n - 19}: " in expected
    err, code = tmp_path / "err", tmp_path / "code"
    command = (
        f"{sys.executable} -m probetop.tui.main replay {path} 2>{err}; echo $? >{code}; sleep 30"
    )
    sock = f"recread-test-{time.monotonic_ns()}"
    try:
        _tmux(
            sock, "new-session", "-d", "-x", "120", "-y", "40", f"env TERM=xterm-256color {command}"
        )
        deadline = time.monotonic() + 60
        # The shell creates the file, then writes it: wait for the whole line.
        while time.monotonic() < deadline and not text_of(code).endswith("\n"):
            time.sleep(0.05)
        assert text_of(code).strip() == "2", _tmux(sock, "capture-pane", "-p")
        assert err.read_text().rstrip().endswith(expected)  # after the UI (on stderr too)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
