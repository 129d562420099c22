"""Helpers for the dashboard tests: the recorded session and app builders."""

from __future__ import annotations

from pathlib import Path

from probetop.probes.record.reader import Session, load_session
from probetop.probes.system.collectors import passive_probes
from probetop.tui.run.viewconfig import Display, LiveView, ReplayView, parse_speed
from probetop.tui.ui.app import ProbetopApp, make_app

DATA = Path(__file__).resolve().parent.parent / "data"
SESSION_FILE = DATA / "tui_session.jsonl"  # 24 s of passive probes at 1 Hz, real recorder
# 16 s of `probetop demo --record ... --headless --time 16`: all 8 panes, real probes
DEMO_FILE = DATA / "demo_session.jsonl"


def session() -> Session:
    return load_session(SESSION_FILE)


def replay_app(speed: str = "1") -> ProbetopApp:
    return make_app(ReplayView(session(), speed=parse_speed(speed)))


def demo_app(speed: str = "1") -> ProbetopApp:
    return make_app(ReplayView(load_session(DEMO_FILE), speed=parse_speed(speed)))


def live_app(
    interval_s: float = 0.2,
    *,
    theme: str | None = None,
    focus: str | None = None,
    duration_s: float | None = None,
) -> ProbetopApp:
    display = Display(theme=theme, interval_s=interval_s, focus=focus)
    probes = passive_probes(interval_s)
    return make_app(LiveView(probes=probes, display=display, duration_s=duration_s))


def screen_text(app: ProbetopApp) -> str:
    """What the terminal would show, as plain text."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


async def wait_for(pilot, condition, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    """Let the app run until ``condition()`` holds (a loaded CI box is slow:
    the deadline is generous, it costs time only when the condition never holds)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await pilot.pause(0.05)
    return bool(condition())


def has_samples(app: ProbetopApp, n: int = 2) -> bool:
    return len(app.panes) >= 3 and all(p.samples_seen >= n for p in app.panes.values())
