"""Arrow keys move the selection (tui/ui/app.py ``action_move``): in the grid
to the pane above, below or beside; in the 80x24 compact list along its ▸
cursor. Before, they did nothing there (the list's cursor invited them).
And focus is visible without colour (NO_COLOR): heavy lines, bold title."""

from __future__ import annotations

from probetop.tui.ui.widgets.pane import ProbePane
from tui_fixtures import demo_app, live_app, screen_text, wait_for


def _focused_id(app) -> str | None:  # type: ignore[no-untyped-def]
    return app.focused.probe_id if isinstance(app.focused, ProbePane) else None


async def test_arrows_walk_the_grid() -> None:
    app = live_app()
    async with app.run_test(size=(200, 50)) as pilot:
        assert await wait_for(pilot, lambda: len(app.panes) == 3 and app.plan is not None)
        assert not app.compact
        order = [p.probe_id for p in app.ordered_panes()]
        columns = app.plan.columns
        app.ordered_panes()[0].focus()
        await pilot.pause()
        await pilot.press("right")
        await pilot.pause()
        assert _focused_id(app) == order[1]
        await pilot.press("left")
        await pilot.pause()
        assert _focused_id(app) == order[0]
        await pilot.press("down")
        await pilot.pause()
        assert _focused_id(app) == order[min(columns, len(order) - 1)] or columns >= len(order)
        await pilot.press("up", "up", "up")  # at the top edge: stays
        await pilot.pause()
        assert _focused_id(app) == order[0]


async def test_up_and_down_move_the_compact_lists_cursor() -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")  # pause the replay: nothing moves but the cursor
        assert await wait_for(pilot, lambda: app.compact and len(app.panes) >= 4)
        order = [p.probe_id for p in app.ordered_panes()]
        first = app.layout.selected or order[0]
        i = order.index(first)
        await pilot.press("down", "down")
        await pilot.pause()
        assert app.layout.selected == order[(i + 2) % len(order)]
        await pilot.press("up")
        await pilot.pause()
        assert app.layout.selected == order[(i + 1) % len(order)]
        marked = [line for line in screen_text(app).splitlines() if line.startswith("▸")]
        assert len(marked) == 1 and order[(i + 1) % len(order)] in marked[0]


async def test_left_and_right_still_seek_in_a_replay() -> None:
    app = demo_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("space")
        assert await wait_for(pilot, lambda: len(app.panes) >= 4)
        await pilot.press("right")
        assert await wait_for(pilot, lambda: app.player is not None and app.player.position_s >= 9)


async def test_focus_is_drawn_without_colour() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: len(app.panes) == 3)
        app.ordered_panes()[0].focus()
        await pilot.pause()
        text = screen_text(app)
        assert text.count("┏") == 1 and text.count("╭") == 2  # heavy corners: the focused pane
