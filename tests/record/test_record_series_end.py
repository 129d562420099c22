"""A device that goes away during `probetop --record` (issue 29, Want 8): a
real loop device, attached and detached while the passive probes record,
ends its series with one ``series_end`` line that replay, report and export
read; recordings made before the line existed read as they did."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from probetop.probes.core.passive import DISK_PROBE_ID
from probetop.probes.core.sample import SeriesEnded
from probetop.probes.record import load_session, schema_path
from probetop.tui.commands.report import print_report
from probetop.tui.run.viewconfig import LiveView
from probetop.tui.ui.app import make_app
from probetop.tui.ui.panes.system import DiskPane

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "disk"))
from disk_fixtures import loop_device

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
DATA = Path(__file__).resolve().parents[1] / "data"
INTERVAL = 0.2  # the disk probe re-lists /sys/block every 10 reads: 2 s


@dataclass(frozen=True)
class Recorded:
    path: Path
    device: str  # loopN
    lines: list[dict]


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _end_written(path: Path, name: str) -> bool:
    """The recording already holds ``name``'s series_end (the line being
    written may be cut: only whole lines are read)."""
    whole = path.read_text().rpartition("\n")[0]
    return any(
        x["type"] == "series_end" and x["entity"] == name and x["probe"] == DISK_PROBE_ID
        for x in (json.loads(line) for line in whole.splitlines() if line.strip())
    )


def _has_device(path: Path, name: str) -> bool:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return False
    return f'@{name}"' in text


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """`probetop --headless --record --with-system icmp` while a loop device
    is attached, read from and detached; the recording and the device's name."""
    if os.geteuid() != 0:
        pytest.skip("needs root: loop devices")
    path = tmp_path_factory.mktemp("closerec") / "s.jsonl"
    proc = subprocess.Popen(
        # an icmp probe too: the export has series of its own around the end
        [
            *PROBETOP,
            "--headless",
            "--record",
            str(path),
            "--with-system",
            "--sample-interval",
            str(INTERVAL),
            "icmp",
            "127.0.0.1",
            "-i",
            "0.05",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # A name of its own: a parallel test's `losetup --find` would take a
        # detached loop0 at once, and the probe would see loop0 never go.
        with loop_device(size=16 << 20, own_name=True) as dev:
            name = os.path.basename(dev)
            fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
            try:
                deadline = time.monotonic() + 20
                while not _has_device(path, name):  # reads until the probe lists it
                    assert time.monotonic() < deadline, f"{name} never reached the recording"
                    os.preadv(fd, [buf], 0)  # counted by the kernel
                    time.sleep(0.05)
                for i in range(200):  # some I/O the series' summary must hold
                    os.preadv(fd, [buf], (i % 4096) * 4096)
                time.sleep(3 * INTERVAL)
            finally:
                os.close(fd)
        deadline = time.monotonic() + 20  # detached: wait for its end in the file
        while not _end_written(path, name):  # its own, not another device's
            assert time.monotonic() < deadline, f"no series_end for {name}"
            time.sleep(0.1)
        time.sleep(3 * INTERVAL)  # a few samples after the end
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    yield Recorded(path, name, _lines(path))


def _ends(rec: Recorded) -> list[dict]:
    return [
        x
        for x in rec.lines
        if x["type"] == "series_end" and x["entity"] == rec.device and x["probe"] == DISK_PROBE_ID
    ]


def test_the_detached_device_ends_once_with_its_summary(recorded: Recorded) -> None:
    ends = _ends(recorded)
    assert len(ends) == 1
    end = ends[0]
    assert end["reason"] == "vanished"
    samples = [x for x in recorded.lines if x["type"] == "sample" and x["probe"] == DISK_PROBE_ID]
    key = f"read_iops@{recorded.device}"
    held = [x for x in samples if key in x["values"]]
    # the end is the first sample without the device; it never shows again
    assert end["last_t"] == held[-1]["t"]
    after = [x for x in samples if x["t"] > end["last_t"]]
    assert after[0]["t"] == end["t"] and not any(key in x["values"] for x in after)
    # its summary is what its samples held, computed here from the file
    values = [x["values"][key] for x in held if x["values"][key] is not None]
    summary = end["summaries"]["read_iops"]
    assert summary["count"] == len(values)
    assert summary["min"] == min(values) and summary["max"] == max(values) > 0
    assert summary["mean"] == pytest.approx(sum(values) / len(values), rel=1e-9)
    assert recorded.lines[-1]["type"] == "footer"  # the footer closes the rest


def test_every_line_validates_and_the_reader_keeps_the_end(recorded: Recorded) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(schema_path().read_text()))
    for line in recorded.lines:
        validator.validate(line)
    session = load_session(recorded.path)
    assert not any("skipped" in w for w in session.warnings)
    ends = [e for e in session.series_ends if e.entity == recorded.device]
    assert len(ends) == 1 and ends[0].reason == "vanished"
    assert ends[0].t_ns == round(_ends(recorded)[0]["t"] * 1e9)
    # the records a replay plays hold it too, between the samples around it
    played = [r for _t, r in session.records() if isinstance(r, SeriesEnded)]
    assert any(r.entity == recorded.device for r in played)


def test_report_marks_the_device_gone_and_says_when(recorded: Recorded) -> None:
    text = subprocess.run(
        [*PROBETOP, "report", str(recorded.path), "--no-charts"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    at = _ends(recorded)[0]["t"]
    assert f"read_iops@{recorded.device} (gone)" in text
    assert f"{recorded.device} at {at:.1f} s (vanished)" in text
    doc = json.loads(
        subprocess.run(
            [*PROBETOP, "report", str(recorded.path), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    ended = doc["probes"][DISK_PROBE_ID]["series_ended"]
    assert [e["entity"] for e in ended].count(recorded.device) == 1


def test_export_lists_the_end_and_openmetrics_still_parses(recorded: Recorded) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    def export(fmt: str) -> str:
        return subprocess.run(
            [*PROBETOP, "export", str(recorded.path), "-O", fmt],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout

    doc = json.loads(export("json"))
    ends = [e for e in doc["series_ended"] if e["entity"] == recorded.device]
    assert len(ends) == 1 and ends[0]["probe"] == DISK_PROBE_ID
    assert ends[0]["timestamp"] is not None
    text = export("openmetrics")
    families = {f.name: f for f in text_string_to_metric_families(text)}  # the whole file
    assert "smokeping_requests" in families  # the icmp probe's series, around the end
    assert recorded.device not in text  # system.* devices are node_exporter's, not ours


def test_compare_names_the_device_that_ended(recorded: Recorded) -> None:
    def compare(*extra: str) -> str:
        return subprocess.run(
            [*PROBETOP, "compare", str(recorded.path), str(recorded.path), "--passive", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout

    at = _ends(recorded)[0]["t"]
    doc = json.loads(compare("--json"))  # every end, on both sides
    ended = [(e["side"], e["t_s"]) for e in doc["series_ended"] if e["entity"] == recorded.device]
    assert ended == [("A", pytest.approx(at, abs=1e-9)), ("B", pytest.approx(at, abs=1e-9))]
    # the text names the first few (other devices of this machine may have
    # come and gone during the recording too: then it is cut with "...")
    disk_ends = sum(
        1 for x in recorded.lines if x["type"] == "series_end" and x["probe"] == DISK_PROBE_ID
    )
    note = next(
        line
        for line in compare("--no-charts").splitlines()
        if line.startswith("note: system.disk:")
    )
    assert f"{2 * disk_ends} series ended during the recording" in note
    disk = [e for e in doc["series_ended"] if e["probe"] == DISK_PROBE_ID]
    assert len(disk) == 2 * disk_ends
    shown = [f"{e['entity']} at {e['t_s']:.1f} s ({e['side']})" for e in disk][:4]
    assert note.endswith(", ".join(shown) + (", ..." if 2 * disk_ends > 4 else ""))


async def test_replay_drops_the_device_when_it_ended(recorded: Recorded) -> None:
    """Played up to the end: the pane has no row and no history left for the
    device (not a frozen last value); just before it, it had both."""
    session = load_session(recorded.path)
    records = list(session.records())
    end_at = next(
        i
        for i, (_t, r) in enumerate(records)
        if isinstance(r, SeriesEnded) and r.entity == recorded.device
    )
    app = make_app(LiveView(probes=[]))
    async with app.run_test(size=(120, 40)) as pilot:
        app.route([r for _t, r in records[:end_at]])
        await pilot.pause(0.05)
        pane = app.panes[DISK_PROBE_ID]
        assert isinstance(pane, DiskPane)
        assert recorded.device in pane.counters
        assert recorded.device in pane.history.entities()
        app.route([records[end_at][1]])
        assert recorded.device not in pane.counters
        assert recorded.device not in pane.history.entities()
        assert recorded.device not in pane.sums
        rows = [row.text for row in pane.table_rows()[0]]
        # said at that moment (another test's loop device may have ended too)
        assert rows[-1].startswith("gone: ") and f"{recorded.device} (0 s ago)" in rows[-1]
        # played on until another device ends (this machine's other loop
        # devices may come and go too; the row names the latest few)
        rest = records[end_at + 1 :]
        until = next((i for i, (_t, r) in enumerate(rest) if isinstance(r, SeriesEnded)), len(rest))
        app.route([r for _t, r in rest[:until]])
        await pilot.pause(0.05)
        assert recorded.device not in pane.history.entities()
        rows = [row.text for row in pane.table_rows()[0]]
        assert rows[-1].startswith("gone: ") and f"{recorded.device} (" in rows[-1]  # with its age
        app.route([r for _t, r in rest[until:]])
        await pilot.pause(0.05)
        assert recorded.device not in pane.history.entities()  # never back


@pytest.mark.parametrize("name", ["demo_session.jsonl", "tui_session.jsonl"])
def test_recordings_from_before_the_line_read_as_they_did(name: str, tmp_path: Path) -> None:
    session = load_session(DATA / name)
    assert session.series_ends == []
    out = tmp_path / "report.json"
    with out.open("w") as f:
        print_report(session, as_json=True, out=f)
    doc = json.loads(out.read_text())
    assert not any("series_ended" in p for p in doc["probes"].values())
    exported = subprocess.run(
        [*PROBETOP, "export", str(DATA / name), "-O", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(exported)["series_ended"] == []
