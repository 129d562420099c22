"""Dashboard behaviour through Textual's pilot: keys in, widgets out.

Live tests run the real passive probes at 0.2 s; replay tests use the
recorded session in tests/data (24 s of passive probes at 1 Hz).
"""

from __future__ import annotations

import math
import threading

import pytest
from probetop.themes import UnknownThemeError, check_theme_name, theme_names
from probetop.tui import commands
from probetop.tui.cli.parser import CommandLineError, parse_command_line
from probetop.tui.ui.app import MIN_HEIGHT, MIN_WIDTH
from probetop.tui.ui.modes import LiveMode, ReplayMode
from probetop.tui.ui.panes.system import CpuPane, DiskPane, NetPane
from probetop.tui.ui.screens.help import HelpScreen
from probetop.tui.ui.screens.maximised import MaximisedScreen
from probetop.tui.ui.screens.prompt import PromptScreen
from tui_fixtures import has_samples, live_app, replay_app, screen_text, session, wait_for


def _errors(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.message for n in app._notifications if n.severity == "error"]


async def test_live_panes_fill_and_route() -> None:
    app = live_app()
    threads_before = set(threading.enumerate())
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))
        await pilot.pause(0.1)
        assert set(app.panes) == {"system.cpu", "system.disk", "system.net"}
        assert isinstance(app.panes["system.cpu"], CpuPane)
        assert isinstance(app.panes["system.disk"], DiskPane)
        assert isinstance(app.panes["system.net"], NetPane)
        cpu = app.panes["system.cpu"]
        assert cpu.samples_seen >= 2
        assert 0.0 <= (cpu.latest("busy_pct") or 0.0) <= 100.0
        text = screen_text(app)
        assert "all cores" in text and "load avg" in text
        assert "r IO/s" in text and "rx pkt/s" in text
        assert "lo" in app.panes["system.net"].entities()
        hub = app.hub
    assert hub is not None and hub.running() == []  # quit stopped every probe
    assert set(threading.enumerate()) <= threads_before | {threading.current_thread()}


async def test_a_frame_after_the_last_screen_is_gone_is_a_no_op() -> None:
    """The frame timer can tick while Textual closes the app, after it has
    removed the last screen (CI: ScreenStackError from render_dirty): the
    records are still stored, nothing is drawn, nothing raises."""
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))
    assert not app.screen_stack
    app._dirty.add("system.cpu")
    app.route([], render=True)
    app.render_dirty()
    assert isinstance(app.mode, LiveMode)
    app.mode.frame()

    replay = replay_app()
    async with replay.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
    assert not replay.screen_stack
    assert isinstance(replay.mode, ReplayMode)
    replay.mode.frame()


async def test_maximise_and_restore() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))
        await pilot.press("i")  # every NIC gets its row and sparkline, even an idle lo
        app.panes["system.cpu"].focus()
        await pilot.press("m")
        await pilot.pause(0.5)
        assert isinstance(app.screen, MaximisedScreen)
        assert app.screen.pane.probe_id == "system.cpu"
        text = screen_text(app)
        assert "seconds" in text  # the plotext x label
        assert "busy %" in text and "busy_pct" not in text  # the series, labelled for humans
        # Covered panes are not redrawn (that repainted the whole top screen)...
        net = app.panes["system.net"]

        def drawn() -> list[list[float | None]]:
            return [list(r.values or ()) for r in net.table.rows]

        shown = drawn()
        seen = net.samples_seen
        assert await wait_for(pilot, lambda: net.samples_seen > seen + 1)
        assert drawn() == shown
        await pilot.press("escape")
        await pilot.pause()
        await pilot.pause()
        assert not isinstance(app.screen, MaximisedScreen)
        # ...and catch up as soon as the maximised view closes.
        assert drawn() != shown


async def test_help_opens_with_pane_meanings() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "Keys" in text and "busy_pct" in text
        await pilot.press("escape")
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_pause_display_freezes_panes_but_keeps_data() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app, 1))
        await pilot.press("p")
        assert app.display_paused
        assert "DISPLAY PAUSED" in app.status_bar.text
        cpu = app.panes["system.cpu"]
        shown = list(cpu.table.rows[0].values)
        seen = cpu.samples_seen
        assert await wait_for(pilot, lambda: cpu.samples_seen > seen)  # data still arrives
        assert list(cpu.table.rows[0].values) == shown  # but the screen is frozen
        await pilot.press("p")
        await pilot.pause()
        await pilot.pause()
        assert not app.display_paused
        assert len(cpu.table.rows[0].values) > len(shown)


async def test_theme_switch_and_validation() -> None:
    assert {"probetop-dark", "probetop-light", "probetop-contrast", "nord"} <= set(theme_names())
    with pytest.raises(UnknownThemeError, match="probetop-contrast"):
        check_theme_name("no-such-theme")
    app = live_app(theme="probetop-light")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        assert app.current_theme.name == "probetop-light"
        before = app.panes["system.cpu"].table.part_style("seriestable--bar")
        app.theme = "probetop-contrast"
        await pilot.pause()
        after = app.panes["system.cpu"].table.part_style("seriestable--bar")
        assert before.color != after.color


def test_unknown_theme_exits_2_before_ui(capsys: pytest.CaptureFixture[str]) -> None:
    # The CLI reaches run_app only with a terminal; call it as the CLI would.
    from probetop.tui.main import run_app
    from probetop.tui.run.viewconfig import Display, LiveView

    assert run_app(LiveView(display=Display(theme="nope"))) == 2
    err = capsys.readouterr().err
    assert "unknown theme 'nope'" in err and "probetop-contrast" in err


async def test_add_probe_bad_command_line_shows_error() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"nosuchprobe --x", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, PromptScreen)
        errors = _errors(app)
        assert errors and "nosuchprobe" in errors[-1]
        assert set(app.panes) == {"system.cpu", "system.disk", "system.net"}


def test_parse_probe_command_uses_cli_parser() -> None:
    with pytest.raises(CommandLineError, match="probe command"):
        parse_command_line("bogus")
    with pytest.raises(CommandLineError, match="invalid choice"):
        parse_command_line("cpu --engine bogus")
    with pytest.raises(CommandLineError):
        parse_command_line("")
    with pytest.raises(CommandLineError, match="probe command"):
        parse_command_line("--interval 1")
    with pytest.raises(CommandLineError):
        parse_command_line("demo --only nothing")


async def test_add_probe_prompt_lists_the_typed_commands_options_from_its_spec() -> None:
    from textual.widgets import Static

    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("a")
        await pilot.pause()
        hint = app.screen.query_one("#prompt-hint", Static)
        assert "command line" in str(hint.render())
        await pilot.press(*"cpu ")
        await pilot.pause()
        shown = str(hint.render())
        assert "--threads N" in shown and "--cpu-max-prime N" in shown
        await pilot.press("escape")


async def test_add_probe_error_from_probe_is_a_notification() -> None:
    """A ProbeError from build_probes/prepare is shown, not raised; a good line adds a pane."""
    if commands.load("iops") is None:
        pytest.skip("the iops command is not built yet")
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert app.add_probe_line("demo") is False  # not a probe command
        assert app.add_probe_line("iops /nonexistent-dir/file --rw read") is False
        await pilot.pause()
        errors = _errors(app)
        assert any("probe command" in e for e in errors)
        assert any("nonexistent" in e for e in errors), errors
        assert set(app.panes) == {"system.cpu", "system.disk", "system.net"}


async def test_record_to_unwritable_path_notifies() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        inp = app.screen.query_one("Input")
        inp.value = "/nonexistent-dir/x.jsonl"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.recorder is None
        assert any("does not exist" in e for e in _errors(app))


async def test_record_from_palette_action_writes_footer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from probetop.probes.record.reader import load_session

    path = tmp_path / "rec.jsonl"
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert isinstance(app.mode, LiveMode)
        assert await app.mode.start_recording(path)
        assert "REC" in app.status_bar.text
        await pilot.pause(0.6)
        await app.mode.stop_recording("stopped by user")
        assert app.recorder is None
    rec = load_session(path)
    assert rec.footer is not None and rec.footer["reason"] == "stopped by user"
    assert rec.samples("system.cpu")


async def test_too_small_terminal_shows_message() -> None:
    app = live_app()
    async with app.run_test(size=(MIN_WIDTH - 10, MIN_HEIGHT - 4)) as pilot:
        await pilot.pause(0.3)
        assert app.too_small and app.too_small_msg.display
        assert "too small" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.3)
        assert not app.too_small and app.pane_box.display


async def test_usable_at_80x24() -> None:
    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(600):  # a loaded CI machine may need many frames (60 s)
            await pilot.pause(0.1)
            text = screen_text(app)
            if "all cores" in text and "Quit" in text:
                break
        assert "all cores" in text and "Quit" in text, text


async def test_replay_speed_pause_and_status_line() -> None:
    app = replay_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert app.player is not None
        await pilot.press("space")
        assert app.player.paused and "paused 1x" in app.status_bar.text
        await pilot.press("2")
        assert app.player.speed == 10.0
        await pilot.press("3")
        assert "max" in app.status_bar.text
        await pilot.press("space")
        await pilot.pause(0.6)
        assert app.player.at_end
        assert "ended" in app.status_bar.text and "00:24 / 00:24" in app.status_bar.text
        assert app.panes["system.cpu"].samples_seen == len(session().samples("system.cpu"))


async def test_replay_seek_back_rebuilds_panes() -> None:
    app = replay_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.player is not None
        await pilot.press("space")  # pause
        await pilot.press("end")
        await pilot.pause()
        old_pane = app.panes["system.cpu"]
        assert old_pane.samples_seen == len(session().samples("system.cpu"))
        await pilot.press("left")  # 24 s -> 14 s: rebuild from the start
        await pilot.pause()
        await pilot.pause()
        pane = app.panes["system.cpu"]
        assert pane is not old_pane
        expected = [s for s in session().samples("system.cpu") if s["t"] <= 14.007]
        assert pane.samples_seen == len(expected)
        assert pane in app.pane_box.children and old_pane not in app.pane_box.children
        await pilot.press("home")
        await pilot.pause()
        assert app.panes["system.cpu"].samples_seen == 0
        await pilot.press("right")
        await pilot.pause()
        assert 9 <= app.panes["system.cpu"].samples_seen <= 10


async def test_replay_torn_line_warning_is_notified(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from probetop.probes.record.reader import load_session
    from probetop.tui.run.viewconfig import ReplayView
    from probetop.tui.ui.app import make_app
    from tui_fixtures import SESSION_FILE

    lines = SESSION_FILE.read_text().splitlines(keepends=True)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("".join(lines[:-1]) + lines[-2][:20])  # no footer, torn last line
    app = make_app(ReplayView(load_session(torn)))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert any("torn" in w for w in warnings)


async def test_stop_probe_keeps_its_pane() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        assert app.hub is not None and "system.net" in app.hub.running()
        await app.stop_probe("system.net")
        await pilot.pause(0.3)
        assert "system.net" not in app.hub.running()
        assert "system.net" in app.panes
        assert "stopped" in str(app.panes["system.net"].border_subtitle)


async def test_time_limit_stops_probes_not_the_ui() -> None:
    app = live_app(duration_s=0.5)
    async with app.run_test(size=(120, 40)) as pilot:
        # Polled, not a fixed pause: on a loaded machine the probes start (after
        # the first frame) well after the app does.
        for _ in range(100):
            await pilot.pause(0.1)
            if (
                app.hub is not None
                and app.hub.running() == []
                and "probes stopped" in app.status_bar.text
            ):
                break
        assert app.hub is not None and app.hub.running() == []
        assert "probes stopped" in app.status_bar.text
        assert app.is_running


async def test_focus_kind_goes_first_and_is_focused() -> None:
    app = live_app(focus="system.net")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        assert app.pane_box.children[0] is app.panes["system.net"]
        assert app.focused is app.panes["system.net"]


async def test_generic_pane_groups_entities_and_draws_sparklines() -> None:
    from probetop.probes.core.sample import Announce, Sample, Status
    from probetop.tui.run.viewconfig import LiveView
    from probetop.tui.ui.app import make_app
    from probetop.tui.ui.widgets.generic_pane import GenericPane

    info = {
        "id": "fake:1",
        "kind": "fake-kind-without-pane",
        "params": {},
        "reference_command": "fake --flag",
        "metrics": [
            {"name": "ops", "unit": "op/s", "description": "ops", "primary": True},
            {"name": "lat_ms", "unit": "ms", "description": "latency", "primary": False},
        ],
    }
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(120, 40)) as pilot:
        records: list = [Announce("fake:1", 0, info)]
        for i in range(1, 6):
            values = {"ops": float(i), "ops@vda": 10.0 * i, "lat_ms@vda": 0.5, "lat_ms@sdb": 2.0}
            records.append(Sample("fake:1", i * 10**9, 1.0, values))
        records.append(Status("fake:1", 6 * 10**9, "error", "target went away"))
        app.route(records)
        pane = app.panes["fake:1"]
        assert isinstance(pane, GenericPane)
        # The pane renders at the first frame after it is mounted (render_dirty):
        # two pauses were not always enough on a loaded machine.
        rendered = await wait_for(pilot, lambda: pane.table.lines[0].startswith("metric"))
        assert rendered, pane.table.lines
        lines = pane.table.lines
        assert lines[0].split()[:6] == ["metric", "latest", "min", "max", "mean", "p99*"]
        assert lines[1].split()[:5] == ["ops", "5.00", "1.00", "5.00", "3.00"]
        assert "vda:" in lines and "sdb:" in lines
        assert lines[lines.index("vda:") + 1].split()[0] == "ops"
        assert set(pane.rows) == {"ops", "ops@vda"}  # sparklines for primary keys only
        assert list(pane.rows["ops@vda"].values or ())[-1] == 50.0
        # one row per series: a primary key is a table row with its sparkline, never twice
        assert sum(1 for line in lines if line.split()[:1] == ["ops"]) == 2  # ops, ops@vda
        assert "error: target went away" in str(pane.border_subtitle)
        assert pane.has_class("-error")


async def test_wide_terminal_uses_two_columns() -> None:
    app = replay_app(speed="max")
    async with app.run_test(size=(200, 50)) as pilot:
        assert await wait_for(pilot, lambda: len(app.panes) == 3)
        await pilot.pause()
        assert app.pane_box.has_class("-wide")
        cpu, disk = app.panes["system.cpu"], app.panes["system.disk"]
        assert disk.region.x > cpu.region.x and disk.region.y == cpu.region.y
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not app.pane_box.has_class("-wide")


async def test_command_palette_lists_every_action() -> None:
    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app, 1))
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in (
            "Theme",
            "Quit",
            "Help",
            "Add a probe",
            "Stop probe system.cpu",
            "Start recording",
            "Pause display",
            "Maximise system.disk",
        ):
            assert wanted in titles, (wanted, titles)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Pause display")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.display_paused


async def test_every_demo_pane_is_on_screen_and_compact_when_small() -> None:
    from tui_fixtures import demo_app

    app = demo_app(speed="max")
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: len(app.panes) == 8 and app.player.at_end)
        await pilot.pause()
        await pilot.pause()
        assert app.plan is not None and app.plan.columns == 2 and not app.compact
        for pane in app.panes.values():  # all eight within the screen, none scrolled away
            assert pane.region.height >= 5 and pane.region.bottom <= 39, pane.probe_id
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert app.compact and app.index.display
        assert len(app.index.lines) == 8 and app.index.lines[0].startswith("▸ system.cpu")
        assert "events/s" in app.index.text and "loss 0 %" in app.index.text
        assert [p.probe_id for p in app.ordered_panes() if p.display] == ["system.cpu"]
        await pilot.press("tab")
        await pilot.pause()
        assert [p.probe_id for p in app.ordered_panes() if p.display] == ["system.disk"]
        assert app.index.lines[1].startswith("▸ system.disk")
        await pilot.press("shift+tab", "shift+tab")
        await pilot.pause()
        assert app.index.lines[-1].startswith("▸ http")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not app.compact and all(p.display for p in app.panes.values())


async def test_replay_of_a_hand_edited_recording_with_wrongly_typed_params(tmp_path) -> None:
    """Every probe's params replaced by values of the wrong type: the replay
    still opens and plays (a pane that cannot read them falls back to the
    generic pane), no exception reaches the user."""
    import json

    from probetop.probes.record import load_session
    from probetop.tui.run.viewconfig import ReplayView
    from probetop.tui.ui.app import make_app
    from tui_fixtures import DEMO_FILE

    rows = DEMO_FILE.read_text().splitlines()
    header = json.loads(rows[0])
    for probe in header["probes"]:
        probe["params"] = {k: ("abc" if i % 2 else 5) for i, k in enumerate(probe["params"])}
        probe["params"].update({"labels": 5, "percentile": "abc", "urls": 7})
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join([json.dumps(header), *rows[1:]]) + "\n")
    app = make_app(ReplayView(load_session(edited), speed=math.inf))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(1.0)
        assert len(app.panes) == len(header["probes"])
        await pilot.press("q")


def test_fit_status_drops_whole_parts_lowest_rank_first() -> None:
    from probetop.tui.ui.app import fit_status

    parts = [(0, "probetop"), (3, "replay s.jsonl"), (5, "paused 1x"), (2, "idle (i)"), (6, "P!")]
    assert fit_status(parts, 200) == "probetop  |  replay s.jsonl  |  paused 1x  |  idle (i)  |  P!"
    assert fit_status(parts, 40) == "replay s.jsonl  |  paused 1x  |  P!"
    assert fit_status(parts, 20) == "paused 1x  |  P!"
    assert fit_status(parts, 3) == "P!"


def test_fit_status_shortens_a_part_before_dropping_it() -> None:
    """A recording with a long path: the whole 'REC ...' part was dropped at
    80 columns and the line said only 'live'. It shortens to the file name,
    and what still does not fit goes by rank."""
    from probetop.tui.ui.app import fit_status

    path = "/tmp/" + "a-rather-long-recording-file-name-for-the-status-line" * 2 + ".jsonl"
    name = path.rsplit("/", 1)[1]
    parts = [(0, "probetop"), (5, "live"), (4, f"REC {path}", "REC s.jsonl"), (2, "idle (i)")]
    assert fit_status(parts, 500) == f"probetop  |  live  |  REC {path}  |  idle (i)"
    assert fit_status(parts, 80) == "probetop  |  live  |  REC s.jsonl  |  idle (i)"
    assert fit_status(parts, 20) == "live  |  REC s.jsonl"
    assert name not in fit_status(parts, 80)


async def test_a_recording_dashboard_says_so_at_80_columns(tmp_path) -> None:
    """Through the app: REC and the file name stay on the line."""
    name = "a-recording-file-name-long-enough-to-fill-the-status-line.jsonl"
    deep = tmp_path / ("d" * 40)
    deep.mkdir()
    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app, 1))
        assert app.session is not None
        assert await app.session.start_recording(deep / name)
        await pilot.pause(0.3)
        app._update_status()
        assert f"REC {name}" in app.status_bar.text, app.status_bar.text


async def test_status_line_keeps_display_paused_whole_on_a_narrow_terminal() -> None:
    """At 100 columns a replay with idle devices shown and the display paused
    read '... |  DISPLAY PAU': the line was cropped at the edge."""
    app = replay_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("i", "p")
        await pilot.pause()
        status = app.status_bar.rows[0]
        assert status.endswith("DISPLAY PAUSED (p)") and len(status) <= 100, status
        await pilot.resize_terminal(64, 20)
        await pilot.pause()
        status = app.status_bar.rows[0]
        assert "DISPLAY PAUSED (p)" in status and len(status) <= 64, status


@pytest.mark.parametrize("width", [80, 60, 200])
async def test_help_wraps_each_description_under_itself(width: int) -> None:
    """The help is wrapped by the screen, at the dialog's width: a key's
    description continues under the description, never at the left edge
    (text broken by hand for a wide box was broken again at 80 columns:
    'history); escape restores' and 'run;' stood alone at column 0)."""
    app = live_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("question_mark")
        await pilot.pause()
        keys = app.screen.query_one("#help-keys")
        lines = [keys.render_line(y).text.rstrip() for y in range(keys.size.height)]
        text = "\n".join(lines)
        assert "escape restores" in text and "cumulative counter" in text
        body = lines[lines.index(next(x for x in lines if x.startswith("Keys"))) + 1 :]
        headings = ("Replay", "Layout", "Tables")
        for line in body:
            assert not line or line.startswith(("  ", *headings)), line
        # a wrapped description goes on in its own column, under its first word
        desc_column = next(x for x in body if x.startswith("  m or enter")).index("maximise")
        notes = next(i for i, x in enumerate(body) if x.startswith("Layout"))
        keyed = [x for x in body[:notes] if x and not x.startswith("Replay")]
        for line in keyed:
            key_row = not line[2].isspace()
            assert key_row or len(line) - len(line.lstrip()) == desc_column, line
        # ...and so does each pane's number: no meaning continues at the edge.
        panes = app.screen.query_one("#help-panes")
        lines = [panes.render_line(y).text.rstrip() for y in range(panes.size.height)]
        titles = {"Panes", *(str(p.border_title) for p in app.panes.values())}
        assert "busy_pct" in "\n".join(lines)
        for line in lines:
            assert not line or line in titles or line.startswith("  "), line


@pytest.mark.parametrize("width", [60, 80, 120])
async def test_maximised_table_keeps_every_unit_on_screen(width: int) -> None:
    """At 60 columns the maximised table's unit column was cut off at the
    edge: '2596' and '62.0' with no MHz or % beside them. Columns go from
    the right (p99* first); each row's unit stays."""
    app = live_app()
    async with app.run_test(size=(width, 24)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))
        app.panes["system.cpu"].focus()
        await pilot.press("m")
        await pilot.pause(0.3)
        assert isinstance(app.screen, MaximisedScreen)
        table = app.screen.table
        lines = [table.render_line(y).text.rstrip() for y in range(table.size.height)]
        assert lines[0].startswith("metric") and lines[0].endswith("unit"), lines[0]
        rows = [x for x in lines[1:] if x.startswith(("busy", "core"))]
        assert rows
        for row in rows:
            assert row.endswith(("%", "MHz")), row
        if width >= 120:
            assert "p99*" in lines[0]


async def test_maximised_table_says_how_many_rows_it_left_out() -> None:
    """The table gets a share of the screen; rows beyond it were dropped
    without a word (system.cpu at 80x24: the load averages were gone)."""
    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        assert await wait_for(pilot, lambda: has_samples(app))
        pane = app.panes["system.cpu"]
        pane.focus()
        await pilot.press("m")
        await pilot.pause(0.3)
        assert isinstance(app.screen, MaximisedScreen)
        table = app.screen.table
        lines = [table.render_line(y).text.rstrip() for y in range(table.size.height)]
        metrics = len(pane.history.keys)
        shown = len(lines) - 1  # the header
        assert shown >= metrics or lines[-1].startswith("... "), lines
        if lines[-1].startswith("... "):
            assert int(lines[-1].split()[1]) == metrics - (shown - 1), lines


async def test_panes_joining_later_do_not_pull_the_focus_from_each_other() -> None:
    """The demo's families join one by one after the first frame: the first
    to join takes the focus, later ones leave it where it is; a pane the
    user adds (the add-probe prompt) takes it."""
    from probetop.probes.core.sample import Announce

    def joining(pid: str) -> Announce:
        info = {"id": pid, "kind": "fake-kind-without-pane", "params": {}, "metrics": []}
        return Announce(pid, 0, info)

    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        app.route([joining("fake:1")])
        assert await wait_for(pilot, lambda: app.focused is app.panes.get("fake:1"))
        app.route([joining("fake:2")])
        await wait_for(pilot, lambda: app.focused is app.panes.get("fake:2"), timeout=1.5)
        assert app.focused is app.panes["fake:1"], "a later joiner pulled the focus"
        app.show_added_panes()  # what the add-probe prompt does before adding
        app.route([joining("fake:3")])
        assert await wait_for(pilot, lambda: app.focused is app.panes.get("fake:3"))
