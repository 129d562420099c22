"""The live session both the dashboard and the headless runner run probes
through: start, add a probe from a command line, record, --time, shutdown."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from probetop.probes.core.base import ProbeError
from probetop.probes.core.sample import Sample
from probetop.probes.record.reader import load_session
from probetop.probes.system import CpuLoadProbe, NetProbe
from probetop.tui.run.livesession import LiveSession


async def first_sample(feed, timeout: float = 60.0) -> list:  # type: ignore[no-untyped-def]
    """Drain ``feed`` until a Sample has come (a condition, not a fixed sleep: under
    load the probe's first interval can come late); every record drained."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    got: list = []
    while not any(isinstance(r, Sample) for r in got):
        assert loop.time() < deadline, f"no sample in {timeout} s: {got}"
        got += feed.drain()
        await asyncio.sleep(0.02)
    return got


class Notes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, message: str, *, title: str = "", severity: str = "information") -> None:
        self.seen.append((severity, title, message))


class Broken(NetProbe):
    id = "broken"

    def prepare(self) -> None:
        raise ProbeError("cannot read the counters")


async def test_time_up_stops_the_probes_and_closes_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    notes = Notes()
    changes: list[bool] = []
    session = LiveSession(
        [CpuLoadProbe(0.05)],
        record=path,
        command=["probetop"],
        notify=notes,
        on_change=lambda: changes.append(True),
    )
    feed = await session.start()
    assert session.recorder is not None and session.running() == ["system.cpu"]
    drained = await first_sample(feed)
    assert await session.time_up()
    assert session.probes_stopped and session.running() == [] and session.recorder is None
    assert not await session.time_up()  # once
    assert changes and ("information", "", f"recording saved: {path}") in notes.seen
    assert any(isinstance(r, Sample) for r in drained + feed.drain())
    await session.shutdown("completed")
    await session.shutdown("completed")  # safe twice
    rec = load_session(path)
    assert rec.footer is not None and rec.footer["reason"] == "time"


async def test_a_probe_that_cannot_start_is_notified_or_raised() -> None:
    notes = Notes()
    session = LiveSession([Broken(0.1), CpuLoadProbe(0.1)], notify=notes)
    await session.start()
    assert session.running() == ["system.cpu"]
    assert notes.seen[0][:2] == ("error", "broken not started")
    await session.shutdown()
    strict = LiveSession([Broken(0.1)])
    try:
        await strict.start(strict=True)
    except ProbeError as exc:
        assert "cannot read" in str(exc)
    else:
        raise AssertionError("a strict start must raise the probe's error")


async def test_add_probe_line_parses_with_the_cli_and_reports_errors(tmp_path: Path) -> None:
    notes = Notes()
    session = LiveSession([], notify=notes)
    await session.start()
    assert not session.add_probe_line("")
    assert not session.add_probe_line("nosuchprobe --x")
    assert notes.seen[-1][1] == "cannot add probe" and "nosuchprobe" in notes.seen[-1][2]
    assert not session.add_probe_line("demo")
    assert session.add_probe_line("cpu --threads 1 --time 0.3 --max-prime 500")
    assert session.running() == ["cpu"]
    await session.shutdown("completed")
    assert not session.add_probe_line("cpu --threads 1")  # finished: nothing more starts


async def test_recording_can_start_and_stop_at_runtime(tmp_path: Path) -> None:
    notes = Notes()
    session = LiveSession([CpuLoadProbe(0.05)], notify=notes)
    feed = await session.start()
    assert not await session.start_recording(tmp_path / "no-such-dir" / "x.jsonl")
    assert notes.seen[-1][:2] == ("error", "recording not started")
    path = tmp_path / "r.jsonl"
    assert await session.start_recording(path)
    feed.drain()
    await first_sample(feed)  # one sample since the recording started
    await session.stop_recording("stopped by user")
    await session.shutdown()
    rec = load_session(path)
    assert rec.footer is not None and rec.footer["reason"] == "stopped by user"
    assert rec.samples("system.cpu")


async def test_signal_handlers_reach_the_host_and_are_removed() -> None:
    session = LiveSession([])
    await session.start()
    got: list[str] = []
    session.install_signal_handlers(got.append)
    loop = asyncio.get_running_loop()
    signal.raise_signal(signal.SIGHUP)
    await asyncio.sleep(0.05)
    assert got == ["SIGHUP"]
    session.remove_signal_handlers()
    assert not loop.remove_signal_handler(signal.SIGHUP)  # nothing left installed
    await session.shutdown()


def test_the_session_is_cli_layer_and_never_loads_textual() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import probetop.tui.run.livesession, probetop.tui.run.runner\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_added_probe_honours_time_where_its_command_line_does() -> None:
    """`http URL --time 0.6` typed into the prompt stops after 0.6 s, as on
    the command line (it ran on for good: only cpu/iops/warmup end themselves)."""
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    notes = Notes()
    session = LiveSession([], notify=notes)
    await session.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        assert session.add_probe_line(f"http {url} --time 0.6 --interval 0.1")
        (probe_id,) = session.running()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while session.running() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert session.running() == []
        assert any("stopped after 0.6 s (--time)" in message for _s, _t, message in notes.seen)
        assert probe_id in notes.seen[-1][2]
    finally:
        await session.shutdown("completed")
        server.shutdown()
        server.server_close()


async def test_added_probe_refuses_options_of_a_whole_run(tmp_path: Path) -> None:
    """--record, --json, --metrics... set up a run; typed into the prompt they
    were dropped silently (`cpu --record x.jsonl` recorded nothing)."""
    notes = Notes()
    session = LiveSession([], notify=notes)
    await session.start()
    try:
        for extra in (
            f"--record {tmp_path / 'x.jsonl'}",
            "--json",
            "--headless",
            "--metrics 0",
            f"--textfile {tmp_path}",
            "--assert 'cpu.eps>1'",
            "--detach",
            "--theme probetop-light",
        ):
            assert not session.add_probe_line(f"cpu --time 0.2 {extra}"), extra
            severity, title, message = notes.seen[-1]
            assert (severity, title) == ("error", "cannot add probe"), notes.seen[-1]
            assert "would be ignored here" in message and extra.split()[0] in message, message
        assert session.running() == []
        assert not (tmp_path / "x.jsonl").exists()
    finally:
        await session.shutdown("completed")
