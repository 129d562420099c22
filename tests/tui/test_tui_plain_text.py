"""Text that comes from outside probetop (a URL, a file path, a probe's or
the kernel's message) is shown as it is, never read as Textual markup.

Seen by a hostile tester: ``probetop http --watch 'http://h/?filter[status]=open'``
titled its pane ``http  h/?filter=open`` (``[status]`` read as a style tag),
an IOPS target ``/tmp/[b]/[/]x.img`` was titled ``/tmp//x.img``, and a URL
or path holding ``[/]`` or ``[link=http://...]`` ended the dashboard with a
``MarkupError`` traceback, exit 1. Border titles, border subtitles (a probe's
status) and notifications all took such text as markup.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))
from http_fixtures import LocalServer
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.http import HttpProbe, HttpSettings
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from tui_fixtures import has_samples, live_app, screen_text, wait_for

# Each is markup to Textual: a style tag, a close with nothing open (an
# error), a link whose value is not valid markup (an error), an action.
MARKUP = ("[status]", "[b]", "[/]", "[link=http://e]", "[@click=app.quit]")


async def test_a_url_with_brackets_titles_its_pane_as_given() -> None:
    with LocalServer() as server:
        url = f"{server.url}/?[status]&[/]&[link=a://b]"
        probe = HttpProbe(HttpSettings(urls=(url,), interval_s=0.1, count=1000))
        label = probe.id.removeprefix("http:")  # the pane's title is "http  " and this
        assert all(tag in label for tag in ("[status]", "[/]", "[link=a://b]")), label
        app = make_app(LiveView(probes=[probe], display=Display(interval_s=0.1, focus="http")))
        async with app.run_test(size=(200, 40)) as pilot:
            assert await wait_for(pilot, lambda: app.panes.get(probe.id) is not None)
            pane = app.panes[probe.id]
            assert await wait_for(pilot, lambda: pane.samples_seen > 0), pane.last_status
            await pilot.pause(0.2)
            assert pane.border_title == f"http  {label}"
            assert f"http  {label}" in screen_text(app)


async def test_a_status_and_a_notification_with_brackets_are_shown_as_given(
    tmp_path: Path,
) -> None:
    app = live_app()
    async with app.run_test(size=(200, 40), notifications=True) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))
        reason = "cannot read " + "x".join(MARKUP)  # as a probe's error would name a path
        app.route([Status("system.cpu", now_ns(), "error", reason)])
        pane = app.panes["system.cpu"]
        assert await wait_for(pilot, lambda: reason in str(pane.border_subtitle), 10)
        assert pane.border_subtitle == f"error: {reason}"
        assert f"error: {reason}" in screen_text(app)
        # A probe that cannot start is a notification naming its target.
        (tmp_path / "[").mkdir()
        target = tmp_path / "[" / "]b[/]missing" / "x.img"
        assert str(tmp_path / "[/]b[/]missing") in str(target)
        assert app.add_probe_line(f"iops '{target}' --rw read") is False
        await pilot.pause(0.3)
        said = [str(n.message) for n in app._notifications]
        assert any(str(target.parent) in m for m in said), said
        await pilot.pause(0.3)
        toasts = "".join(str(t.render()) for t in app.screen.query("Toast"))
        assert str(target.parent) in toasts.replace("\n", ""), toasts
