"""A probe that fails keeps its reason in its pane's border (issue 29, seen
by a hostile tester: two destroying runs confirmed on one target within
milliseconds; the loser's lock, taken after the check both passed, failed
with "in use by probetop PID N", and its pane showed only "stopped: failed":
the hub's "stopped" status, right after the error, replaced it)."""

from __future__ import annotations

from probetop.probes.core.sample import Status, now_ns
from tui_fixtures import has_samples, live_app, wait_for

REASON = "/dev/loop9 is in use by probetop PID 4242 (iops /dev/loop9): one run per target"


async def test_the_error_that_stopped_a_probe_stays_in_its_border() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))  # its "started" routed
        # in the order the hub publishes them when a probe's run raises
        app.route([Status("system.cpu", now_ns(), "error", REASON)])
        app.route([Status("system.cpu", now_ns(), "stopped", "failed")])
        pane = app.panes["system.cpu"]
        shown = await wait_for(pilot, lambda: "PID 4242" in str(pane.border_subtitle), 10)
        assert shown, (pane.last_status, pane.border_subtitle)
        assert str(pane.border_subtitle).startswith("error: ")
        assert pane.has_class("-error")
