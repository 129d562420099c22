"""SVG snapshots of the dashboard, driven by the recorded session in
tests/data so every frame is deterministic (replay paused at a fixed time).

Update after an intended visual change: pytest tests/tui/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

from textual.pilot import Pilot
from tui_fixtures import replay_app


async def _paused_at_10s(pilot: Pilot) -> None:
    app = pilot.app
    app.player.paused = True  # type: ignore[attr-defined]
    await app._seek(10.0)  # type: ignore[attr-defined]
    await pilot.pause()
    await pilot.pause()
    app.set_focus(None)


def test_snapshot_replay_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(replay_app(), terminal_size=(120, 40), run_before=_paused_at_10s)


def test_snapshot_replay_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(replay_app(), terminal_size=(80, 24), run_before=_paused_at_10s)


def test_snapshot_maximised_cpu(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await _paused_at_10s(pilot)
        pilot.app.action_maximise("system.cpu")  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(replay_app(), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_light_theme(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "probetop-light"
        await _paused_at_10s(pilot)

    assert snap_compare(replay_app(), terminal_size=(100, 30), run_before=run_before)


def test_snapshot_help(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        await _paused_at_10s(pilot)
        pilot.app.action_help()  # type: ignore[attr-defined]
        await pilot.pause()

    assert snap_compare(replay_app(), terminal_size=(100, 40), run_before=run_before)
