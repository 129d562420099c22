"""The start-up order behind the first numbers (issue 28): the passive probes'
first interval starts when they are made, early in the process, and a
probe's first sample is drawn when it comes, not at the next frame.

A rate still covers at least one whole interval: nothing here makes an
interval shorter. Times are compared with each other (which came first),
with margins that hold on a loaded machine, never against a speed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import pytest
from probetop.probes.core.base import ProbeError
from probetop.probes.core.sample import Sample, now_ns
from probetop.probes.system import NetProbe, passive_probes
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app
from pty_session import PtySession
from tui_fixtures import wait_for


async def _samples(probe, count: int, timeout_s: float = 30.0) -> list[Sample]:
    """Run ``probe`` until it has emitted ``count`` samples."""
    got: list[Sample] = []
    done = asyncio.Event()

    def emit(record) -> None:  # type: ignore[no-untyped-def]
        if isinstance(record, Sample):
            got.append(record)
            if len(got) >= count:
                done.set()

    task = asyncio.create_task(probe.run(emit))
    try:
        await asyncio.wait_for(done.wait(), timeout_s)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return got


def _start_ns(sample: Sample) -> float:
    return sample.t_ns - sample.interval_s * 1e9


async def test_the_first_interval_starts_when_the_passive_probe_was_made() -> None:
    interval_s = 0.4
    made_before = now_ns()
    probes = passive_probes(interval_s)
    made_after = now_ns()
    await asyncio.sleep(interval_s / 2)  # the dashboard's imports and first frame
    started = now_ns()
    for probe in probes:
        probe.prepare()  # the hub's; it must not read again
    runs = await asyncio.gather(*(_samples(probe, 2) for probe in probes))
    for probe, (first, second) in zip(probes, runs, strict=True):
        # Its first reading is the one taken when it was made, before run() began.
        assert made_before <= _start_ns(first) <= made_after + 1e6, probe.id
        assert _start_ns(first) < started
        assert first.interval_s >= interval_s  # a whole interval, never less
        assert second.interval_s > interval_s / 2  # the grid goes on from there


async def test_an_old_first_reading_makes_a_longer_first_interval_never_a_shorter() -> None:
    interval_s = 0.2
    [probe] = passive_probes(interval_s)[:1]
    await asyncio.sleep(interval_s * 1.5)  # older than one interval when it runs
    first, second = await _samples(probe, 2)
    assert first.interval_s >= interval_s * 1.5
    assert second.interval_s > interval_s / 2

    [stale] = passive_probes(interval_s)[:1]
    await asyncio.sleep(interval_s * 4)  # older than FIRST_READING_MAX_AGE intervals
    started = now_ns()
    (first,) = await _samples(stale, 1)
    assert _start_ns(first) >= started  # read again when it ran
    assert interval_s <= first.interval_s < interval_s * 4


async def test_a_first_sample_is_drawn_when_it_comes_not_at_the_next_frame(monkeypatch) -> None:
    # Frames 30 s apart: within the test only the first-sample look can draw.
    monkeypatch.setattr("probetop.tui.ui.modes.live.frame_seconds", lambda interval_s: 30.0)
    probes = passive_probes(0.3)
    app = make_app(LiveView(probes=probes, display=Display(interval_s=0.3)))
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: "system.net" in app.panes)
        ids = ("system.cpu", "system.disk", "system.net")
        assert await wait_for(pilot, lambda: all(app.panes[i].samples_seen for i in ids), 20)
        # Every probe has drawn one: the look stops, the fixed frame rate is back.
        seen = {i: app.panes[i].samples_seen for i in ids}
        await pilot.pause(1.0)  # three more intervals measured, no frame due
        assert {i: app.panes[i].samples_seen for i in ids} == seen
        await pilot.press("q")


class _Silent(NetProbe):
    """A probe that is announced and never measures."""

    id = "silent"

    async def run(self, emit) -> None:  # type: ignore[no-untyped-def]
        await asyncio.Event().wait()


async def test_waiting_for_a_first_sample_looks_at_nothing_on_a_timer(monkeypatch) -> None:
    """While a probe's first sample is awaited, no timer wakes the loop to
    look for it (the old look ran every 50 ms: ~20 ticks a second); the
    first sample that comes is still drawn at once."""
    from textual.timer import Timer

    monkeypatch.setattr("probetop.tui.ui.modes.live.frame_seconds", lambda interval_s: 30.0)
    ticks: list[str] = []
    real_tick = Timer._tick

    async def counted(self, **kw):  # type: ignore[no-untyped-def]
        name = getattr(self._callback, "__name__", self.name)
        if name != "_check_terminal":  # 1 s, only where stdout is a terminal
            ticks.append(name)
        return await real_tick(self, **kw)

    monkeypatch.setattr(Timer, "_tick", counted)
    silent = _Silent(0.3)
    joiner = _Joiner(0.3)
    app = make_app(LiveView(probes=[silent], display=Display(interval_s=0.3)))
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: "silent" in app.panes)
        await pilot.pause(0.5)  # the start-up's own timers done
        ticks.clear()
        await pilot.pause(2.0)
        assert len(ticks) <= 4, ticks  # 40 with the old 50 ms look
        assert app.session is not None
        joiner.prepare()
        app.session.add_probes([joiner])
        app.mode.frame()  # the joining's delivery draws its pane (LiveMode._join_later)
        assert await wait_for(pilot, lambda: "joiner" in app.panes)
        assert await wait_for(pilot, lambda: app.panes["joiner"].samples_seen, 10)
        await pilot.press("q")


def test_the_dashboards_first_passive_interval_began_before_its_probe_started(
    tmp_path: Path,
) -> None:
    """In a real terminal, recorded: each passive probe's first sample covers
    an interval that began before the probe started (its reading was taken
    when it was made, before the first frame), at least one interval long;
    q during start-up-ish leaves a whole recording (its footer)."""
    path = tmp_path / "rec.jsonl"
    session = PtySession.start(["--record", str(path)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _sample_count(path) < 6:
            time.sleep(0.1)
        session.type(b"q")
        assert session.proc.wait(timeout=30) == 0, session.text[-2000:]
    finally:
        session.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[-1]["type"] == "footer"
    for pid in ("system.cpu", "system.disk", "system.net"):
        started = next(
            x["t"] for x in lines if x["type"] == "status" and x["probe"] == pid
            and x["level"] == "started"
        )  # fmt: skip
        first = next(x for x in lines if x["type"] == "sample" and x["probe"] == pid)
        assert first["interval"] >= 1.0, (pid, first)
        assert first["t"] - first["interval"] < started, (pid, first, started)


def _sample_count(path: Path) -> int:
    try:
        return path.read_text().count('"type":"sample"')
    except OSError:
        return 0


class _Joiner(NetProbe):
    """A probe joining the dashboard whose first sample comes as it starts."""

    id = "joiner"

    async def run(self, emit) -> None:  # type: ignore[no-untyped-def]
        emit(Sample(self.id, now_ns(), 1.0, {"rx_pps@lo": 0.0}))
        await asyncio.Event().wait()


async def test_probes_joining_while_the_recording_opens_start_after_it(
    tmp_path: Path, monkeypatch
) -> None:
    """A demo probe that joins while ``begin`` is still opening the recording
    starts nothing: every probe starts once the recording listens, so no
    first sample (due at once for a passive probe whose first reading is
    old) is lost to the recording."""
    from probetop.tui.run import livesession
    from probetop.tui.run.livesession import LiveSession

    # Here begin() is held in the opening until shutdown() has returned, so
    # shutdown's wait for it always runs out: the path under test whatever
    # its length. The product's 10 s made this test 20 s of sleep.
    monkeypatch.setattr(livesession, "BEGIN_WAIT_S", 0.5)
    opened = asyncio.Event()
    real_open = LiveSession._open_recorder

    async def slow_open(self, path):  # type: ignore[no-untyped-def]
        await opened.wait()
        return await real_open(self, path)

    monkeypatch.setattr(LiveSession, "_open_recorder", slow_open)
    session = LiveSession(passive_probes(0.2), record=tmp_path / "rec.jsonl")
    session.open()
    begin = asyncio.create_task(session.begin())
    await asyncio.sleep(0.3)  # begin() waits in the recording's opening
    joiner = _Joiner(0.2)
    joiner.prepare()
    session.add_probes([joiner])
    await asyncio.sleep(0.3)
    assert session.running() == []  # nothing started before the recording
    opened.set()
    await begin
    assert sorted(session.running()) == sorted(["joiner", *(p.id for p in session.probes)])
    await asyncio.sleep(0.2)
    await session.shutdown()
    lines = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_text().splitlines()]
    assert "joiner" in {x["probe"] for x in lines if x["type"] == "sample"}


async def test_a_quit_while_the_recording_opens_leaves_it_whole(
    tmp_path: Path, monkeypatch
) -> None:
    """q or Ctrl-C during start-up, while ``begin`` is writing the
    recording's header: the recording still gets its footer (it was left
    with the header alone), whether ``begin`` goes on or is cancelled."""
    from probetop.tui.run import livesession
    from probetop.tui.run.livesession import LiveSession

    # Here begin() is held in the opening until shutdown() has returned, so
    # shutdown's wait for it always runs out: the path under test whatever
    # its length. The product's 10 s made this test 20 s of sleep.
    monkeypatch.setattr(livesession, "BEGIN_WAIT_S", 0.5)
    opened = asyncio.Event()
    real_open = LiveSession._open_recorder

    async def slow_open(self, path):  # type: ignore[no-untyped-def]
        recorder = await real_open(self, path)  # the header is written
        await opened.wait()
        return recorder

    monkeypatch.setattr(LiveSession, "_open_recorder", slow_open)
    for cancel in (False, True):
        opened.clear()
        path = tmp_path / f"rec-{cancel}.jsonl"
        session = LiveSession(passive_probes(0.2), record=path)
        session.open()
        begin = asyncio.create_task(session.begin())
        await asyncio.sleep(0.3)  # begin() waits in the recording's opening
        await session.shutdown("completed")
        if cancel:
            begin.cancel()
        opened.set()
        with contextlib.suppress(asyncio.CancelledError):
            await begin
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        assert [lines[0]["type"], lines[-1]["type"]] == ["header", "footer"], (cancel, lines)
        assert session.recording_failures == []


def _joining_with(makers: list) -> tuple:
    """A ``_Joining`` (tui/main.py) over a command whose ``join_probes`` gives
    ``makers``; and the list its deliveries go to."""
    import types

    from probetop.tui.main import _Joining

    module = types.SimpleNamespace(join_probes=lambda plan, stack: list(makers))
    return _Joining(None, module, set()), []  # type: ignore[arg-type]


def test_the_makers_run_without_the_collector_and_it_is_on_after_the_last() -> None:
    """The demo's makers (imports, native loads) run with the cyclic
    collector off; it is on again once the last one is out, a failing one
    included, and what they built is frozen out of its reach."""
    import gc
    import threading

    seen: list[bool] = []
    release = threading.Event()

    def slow() -> tuple[list, list]:
        seen.append(gc.isenabled())
        release.wait(10)
        return [], []

    def failing() -> tuple[list, list]:
        seen.append(gc.isenabled())
        raise ProbeError("no target here")

    joining, delivered = _joining_with([slow, failing])
    frozen_before = gc.get_freeze_count()
    assert gc.isenabled()
    try:
        joining(delivered.append)
        deadline = time.monotonic() + 10
        while len(delivered) < 1 and time.monotonic() < deadline:  # the failing one
            time.sleep(0.01)
        assert not gc.isenabled(), "on again while a maker still runs"
        release.set()
        while len(delivered) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen == [False, False]
        assert len(delivered) == 2
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen_before  # what the makers built: frozen
    finally:
        release.set()
        gc.enable()
        joining.close()
