"""The app by mode: one frozen configuration per mode, the controller picked
by its type, a mode's keys enabled only in that mode."""

from __future__ import annotations

import dataclasses
import math

import pytest
from probetop.probes.system.collectors import passive_probes
from probetop.tui.run.viewconfig import Display, LiveView, ReplayView, parse_speed
from probetop.tui.ui.app import make_app
from probetop.tui.ui.modes import LiveMode, ReplayMode
from tui_fixtures import session, wait_for

LIVE_KEYS = ("add_probe", "toggle_record")
PLAYER_KEYS = ("play_pause", "cycle_speed", "speed", "seek", "seek_to")


def test_configurations_are_frozen_and_typed() -> None:
    live = LiveView(probes=list(passive_probes(1.0)), display=Display(command=["probetop"]))
    assert isinstance(live.probes, tuple) and live.display.command == ("probetop",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        live.record = None  # type: ignore[misc]
    for kind in (LiveView, ReplayView, Display):
        assert "extra" not in {f.name for f in dataclasses.fields(kind)}
    assert parse_speed("max") == math.inf and parse_speed("10") == 10.0


def test_the_mode_comes_from_the_configuration_type() -> None:
    assert isinstance(make_app(LiveView()).mode, LiveMode)
    replay = make_app(ReplayView(session(), speed=math.inf))
    assert isinstance(replay.mode, ReplayMode) and replay.mode.playback.replayed is not None


async def test_a_modes_keys_work_in_that_mode_only() -> None:
    live = make_app(LiveView(probes=list(passive_probes(0.2)), display=Display(interval_s=0.2)))
    async with live.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: bool(live.panes))
        assert all(live.check_action(a, ()) for a in (*LIVE_KEYS, "detach"))
        assert not any(live.check_action(a, ()) for a in PLAYER_KEYS)
        titles = [c.title for c in live.get_system_commands(live.screen)]
        assert "Add a probe" in titles and "Play / pause replay" not in titles

    replay = make_app(ReplayView(session(), speed=math.inf))
    async with replay.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: bool(replay.panes))
        assert replay.player is not None and math.isinf(replay.player.speed)
        assert all(replay.check_action(a, ()) for a in PLAYER_KEYS)
        assert not any(replay.check_action(a, ()) for a in (*LIVE_KEYS, "detach"))
        titles = [c.title for c in replay.get_system_commands(replay.screen)]
        assert "Play / pause replay" in titles and "Add a probe" not in titles
