"""The dashboard when its recording fails mid-run: a status-bar warning and
one notification, the panes go on, and at exit the error on stderr and
status 74. A real 1 MiB tmpfs fills; the last test runs the dashboard in a
real pty."""

from __future__ import annotations

import time
from pathlib import Path

from probetop.probes.record.writer import RECORDING_INCOMPLETE_EXIT
from probetop.probes.system import passive_probes
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from pty_session import PtySession
from record_helpers import fill, tmpfs


async def test_status_bar_and_one_notification(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "1m") as small:
        fill(small, 72 * 1024)
        app = make_app(
            LiveView(
                probes=passive_probes(0.05),
                record=small / "rec.jsonl",
                display=Display(interval_s=0.05),
            )
        )
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (
                app.session is not None and app.session.recording_failures
            ):
                await pilot.pause(0.1)
            assert app.session is not None and app.session.recording_failures
            await pilot.pause(0.3)
            assert "RECORDING FAILED" in app._status_text
            assert "REC " not in app._status_text.replace("RECORDING", "")
            errors = [n for n in app._notifications if n.severity == "error"]
            assert len(errors) == 1 and "No space left on device" in errors[0].message
            seen = app.panes["system.cpu"].samples_seen
            await pilot.pause(0.5)
            assert app.panes["system.cpu"].samples_seen > seen  # the live view goes on
            await pilot.press("q")


def test_dashboard_exits_74_and_says_why(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "1m") as small:
        fill(small, 72 * 1024)
        path = small / "rec.jsonl"
        app = PtySession.start(["--record", str(path), "--interval", "0.05"])
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and b"RECORDING FAILED" not in app.output:
                time.sleep(0.1)
            assert b"RECORDING FAILED" in app.output, bytes(app.output)[-800:]
            assert app.proc.poll() is None  # the dashboard goes on
            app.type(b"q")
            rc = app.proc.wait(timeout=60)
        finally:
            app.close()
        assert rc == RECORDING_INCOMPLETE_EXIT
        tail = bytes(app.output).split(b"\x1b[?1049l")[-1].decode(errors="replace")
        assert "probetop: error: the recording is incomplete" in tail, tail
        assert "No space left on device" in tail and "Traceback" not in tail
        assert path.read_bytes().endswith(b"\n")
