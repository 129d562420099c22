"""The exporter inside a live session and the dashboard: a probe added from
the prompt is exported, the dashboard says where it serves, and shutdown
closes the endpoint after the textfile's last write."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

from metrics_fixtures import LoopbackHttp, parse, scrape_text, value
from probetop.probes.system import CpuLoadProbe, passive_probes
from probetop.tui.app import make_app
from probetop.tui.config import AppConfig
from probetop.tui.metrics.address import MetricsAddress
from probetop.tui.metrics.live import MetricsExporter
from probetop.tui.session import LiveSession


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
    app = make_app(AppConfig(probes=list(passive_probes(0.2)), interval_s=0.2, metrics=exporter))
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
