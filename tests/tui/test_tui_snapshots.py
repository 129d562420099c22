"""SVG snapshots of the dashboard, driven by the recorded session in
tests/data so every frame is deterministic (replay paused at a fixed time).

Update after an intended visual change: pytest tests/tui/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

from textual.pilot import Pilot
from tui_fixtures import demo_app, replay_app


async def _paused_at(pilot: Pilot, t: float) -> None:
    app = pilot.app
    app.player.paused = True  # type: ignore[attr-defined]
    await app._seek(t)  # type: ignore[attr-defined]
    await pilot.pause()
    await pilot.pause()
    app.set_focus(None)
    await pilot.pause()


async def _paused_at_10s(pilot: Pilot) -> None:
    await _paused_at(pilot, 10.0)


async def _demo_paused_at_12s(pilot: Pilot) -> None:
    await _paused_at(pilot, 12.0)


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


# The demo's eight panes (system.cpu, system.disk, system.net, cpu, iops, warmup,
# icmp, http): every one visible at 120x40 and 200x60 (grid), and at 80x24
# as the compact list of headlines above the first pane's details.


def test_snapshot_demo_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(demo_app(), terminal_size=(80, 24), run_before=_demo_paused_at_12s)


def test_snapshot_demo_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(demo_app(), terminal_size=(120, 40), run_before=_demo_paused_at_12s)


def test_snapshot_demo_200x60(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(demo_app(), terminal_size=(200, 60), run_before=_demo_paused_at_12s)


def test_snapshot_demo_maximised_icmp(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """One unit per axis: pps, loss % and RTT µs in panels of their own."""

    async def run_before(pilot: Pilot) -> None:
        await _demo_paused_at_12s(pilot)
        pilot.app.action_maximise("icmp:127.0.0.1")  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(demo_app(), terminal_size=(120, 40), run_before=run_before)
