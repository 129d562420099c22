"""``on_header``: the hook a detached session says "ready" from.

Real recorders on real files: the hook must run only once the header line
is in the file (what a reader of the file sees then is checked from inside
the hook), never for an in-memory recording, never for one that failed to
start, and not after it was removed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from probetop.probes.core.hub import Hub
from probetop.probes.record import Recorder, RecordingError, load_session, on_header
from probetop.probes.system import passive_probes


def _hub() -> Hub:
    hub = Hub()
    for probe in passive_probes(1.0):
        hub.add(probe)
    return hub


@pytest.mark.parametrize("name", ["rec.jsonl", "rec.jsonl.zst"])
def test_the_hook_runs_once_the_header_is_in_the_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    seen: list[tuple[Path, dict[str, object]]] = []

    def hook(written: Path) -> None:
        # What any other process would read at this moment.
        seen.append((written, load_session(written).header))

    async def record() -> None:
        recorder = Recorder(path, _hub(), ["probetop", "x"])
        await recorder.start()
        assert len(seen) == 1  # before start() returned: the probes start after it
        await recorder.close()

    unhook = on_header(hook)
    try:
        asyncio.run(record())
    finally:
        unhook()
    assert seen[0][0] == path
    assert seen[0][1]["type"] == "header" and seen[0][1]["command"] == ["probetop", "x"]
    asyncio.run(_again(path))
    assert len(seen) == 1  # removed: not called again


async def _again(path: Path) -> None:
    recorder = Recorder(path, _hub(), ["probetop"])
    await recorder.start()
    await recorder.close()


def test_no_hook_for_memory_or_a_refused_start(tmp_path: Path) -> None:
    path = tmp_path / "held.jsonl"
    seen: list[Path] = []

    async def record() -> None:
        memory = Recorder.in_memory(_hub(), ["probetop"])
        await memory.start()
        first = Recorder(path, _hub(), ["probetop"])
        await first.start()
        second = Recorder(path, _hub(), ["probetop"])  # the lock is held: refused
        with pytest.raises(RecordingError, match="cannot record to"):
            await second.start()
        await first.close()
        await memory.close()

    unhook = on_header(seen.append)
    try:
        asyncio.run(record())
    finally:
        unhook()
    assert seen == [path]  # the first file recorder only
