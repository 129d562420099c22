"""The dashboard's modes: live, replay, attached (see ``base.py``).

``mode_for(host, config)`` makes the controller for a configuration, by its
type (``tui/run/viewconfig.py``). ``MODE_ACTIONS``: every action some mode
serves; the shell enables one only when its mode serves it.
"""

from __future__ import annotations

from probetop.tui.run.viewconfig import AppConfig, AttachView, LiveView, ReplayView
from probetop.tui.ui.modes.attach import AttachMode
from probetop.tui.ui.modes.base import DETACH_BINDING, Mode, ModeHost
from probetop.tui.ui.modes.live import LIVE_BINDINGS, LiveMode, frame_seconds
from probetop.tui.ui.modes.replay import PLAYER_BINDINGS, PlayerMode, ReplayMode

MODE_ACTIONS = LiveMode.ACTIONS | ReplayMode.ACTIONS | AttachMode.ACTIONS

__all__ = [
    "DETACH_BINDING",
    "LIVE_BINDINGS",
    "MODE_ACTIONS",
    "PLAYER_BINDINGS",
    "AttachMode",
    "LiveMode",
    "Mode",
    "ModeHost",
    "PlayerMode",
    "ReplayMode",
    "frame_seconds",
    "mode_for",
]


def mode_for(host: ModeHost, config: AppConfig) -> Mode:
    """The controller for ``config``'s mode."""
    if isinstance(config, LiveView):
        return LiveMode(host, config)
    if isinstance(config, ReplayView):
        return ReplayMode(host, config)
    if isinstance(config, AttachView):
        return AttachMode(host, config)
    raise TypeError(f"not a dashboard configuration: {config!r}")
