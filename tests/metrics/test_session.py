"""The exporter inside a live session and the dashboard: a probe added from
the prompt is exported, the dashboard says where it serves, and shutdown
closes the endpoint after the textfile's last write."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from metrics_fixtures import LoopbackHttp, parse, scrape_text, value
from probetop.probes.system import CpuLoadProbe, passive_probes
from probetop.tui.metrics.address import MetricsAddress
from probetop.tui.metrics.live import MetricsExporter
from probetop.tui.run.livesession import LiveSession
from probetop.tui.run.viewconfig import Display, LiveView
from probetop.tui.ui.app import make_app


def _closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) != 0


async def _scrape(url: str) -> dict:
    return parse(await asyncio.to_thread(scrape_text, url))


async def test_a_probe_added_from_the_prompt_is_exported(tmp_path: Path) -> None:
    exporter = MetricsExporter(MetricsAddress("127.0.0.1", 0), tmp_path, interval_s=0.2)
    exporter.open()
    assert exporter.url is not None
    port = int(exporter.url.rsplit(":", 1)[1].split("/")[0])
    notes: list[str] = []

    def notify(message: str, *, title: str = "", severity: str = "information") -> None:
        notes.append(message)

    session = LiveSession([CpuLoadProbe(0.2)], metrics=exporter, notify=notify)
    with LoopbackHttp() as target:
        await session.start()
        assert f"serving metrics on {exporter.url}" in notes
        assert session.add_probe_line(f"http {target.url}/ --interval 0.2")
        deadline = time.monotonic() + 60
        families: dict = {}
        while time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            families = await _scrape(exporter.url)
            if "probetop_http_requests" in families:
                break
        assert value(families, "probe_success", url=f"{target.url}/") == 1
        assert not any(
            s.labels.get("probe", "").startswith("system.")
            for f in families.values()
            for s in f.samples
        )
        await session.shutdown("completed")
    final = parse((tmp_path / "probetop.prom").read_text())
    assert value(final, "probetop_http_requests_total") >= value(
        families, "probetop_http_requests_total"
    )
    deadline = time.monotonic() + 2
    while not _closed(port) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _closed(port), "the endpoint is still up after shutdown"


async def test_the_dashboard_runs_the_exporter_it_is_given() -> None:
    exporter = MetricsExporter(MetricsAddress("127.0.0.1", 0), None, interval_s=0.2)
    exporter.open()
    assert exporter.url is not None
    app = make_app(
        LiveView(
            probes=list(passive_probes(0.2)), metrics=exporter, display=Display(interval_s=0.2)
        )
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert app.session is not None and app.session.metrics is exporter
        families = await _scrape(exporter.url)
        assert value(families, "probetop_build_info") == 1
    port = int(exporter.url.rsplit(":", 1)[1].split("/")[0])
    deadline = time.monotonic() + 2
    while not _closed(port) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _closed(port)


async def test_one_writer_per_textfile_at_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shutdown cancels the task of a periodic write still running in its
    thread; the final write then ran beside it ("cannot write
    DIR/probetop.prom: ... in use by probetop PID N (this process)") and,
    when the periodic one won, the final counters were never written. Each
    write is slowed (0.3 s, then the real ``replace_file``) so that shutdown
    lands inside one: never two writers, and the file ends with what the
    exporter holds last."""
    from probetop.tui.metrics import live
    from prometheus_client import generate_latest

    real = live.replace_file
    guard = threading.Lock()
    active, most, writes = [0], [0], [0]
    inside = threading.Event()

    @contextlib.contextmanager
    def slow(path: Path, **kwargs: Any) -> Iterator[Any]:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        inside.set()
        try:
            time.sleep(0.3)
            with real(path, **kwargs) as f:
                yield f
            writes[0] += 1
        finally:
            with guard:
                active[0] -= 1

    monkeypatch.setattr(live, "replace_file", slow)
    exporter = MetricsExporter(None, tmp_path, interval_s=0.1)
    exporter.open()  # the first write (0.3 s)
    session = LiveSession([CpuLoadProbe(0.1)], metrics=exporter)
    with LoopbackHttp() as target:
        await session.start()
        assert session.add_probe_line(f"http {target.url}/ --interval 0.1")
        for _round in range(3):  # a periodic write starts once records arrive
            inside.clear()
            assert await asyncio.to_thread(inside.wait, 30), "no periodic write started"
            assert active[0] == 1
        before = writes[0]
        await session.shutdown("completed")
    assert most[0] == 1, "two writers of one textfile at once"
    assert writes[0] >= before + 1  # the final write happened
    assert "cannot write" not in capsys.readouterr().err
    final = generate_latest(exporter.registry).decode()
    assert (tmp_path / "probetop.prom").read_text() == final
