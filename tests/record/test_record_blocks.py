"""The block reader on recordings of many blocks: damaged files give the same
one-line message as the reference path (every line through ``json``), and
``SessionLoader`` read a step at a time gives what ``load_session`` gives.

The files are a real demo recording (tests/data) repeated with its time
stamps shifted, about 1.4 MB: five 256 KiB blocks, so a damaged line can sit
in the first block, in a middle one, in the last one, or be the torn last
line that the block reader hands back to the line reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from probetop.probes.record import RecordingError, linecheck, load_session, rawlines, reader
from probetop.probes.record.linecheck import LazyExtra
from probetop.probes.record.reader import SessionLoader
from record_helpers import reference_only

DATA = Path(__file__).resolve().parent.parent / "data"
COPIES = 16  # 16 x 80 KB: five blocks


def long_recording() -> list[bytes]:
    """The lines (with newlines) of the demo recording, its body repeated
    COPIES times with the time stamps shifted (its footer last)."""
    rows = (DATA / "demo_session.jsonl").read_bytes().splitlines()
    header, body, footer = rows[0], rows[1:-1], rows[-1]
    assert json.loads(footer)["type"] == "footer"
    out = [header + b"\n"]
    for copy in range(COPIES):
        for row in body:
            line = json.loads(row)
            if copy and line["type"] == "probe":
                continue
            line["t"] = round(line["t"] + 20.0 * copy, 6)
            out.append(json.dumps(line, separators=(",", ":")).encode() + b"\n")
    return [*out, footer + b"\n"]


def outcome(path: Path) -> tuple[str, Any]:
    try:
        session = load_session(path)
    except RecordingError as exc:
        return "error", str(exc)
    lines = [
        {k: (dict(v) if isinstance(v, LazyExtra) else v) for k, v in line.items()}
        for line in session.lines
    ]
    return "session", (lines, session.footer, session.warnings)


def both_ways(path: Path) -> tuple[str, Any]:
    fast = outcome(path)
    with reference_only():
        assert outcome(path) == fast
    return fast


@pytest.fixture(scope="module")
def lines() -> list[bytes]:
    return long_recording()


def test_a_long_recording_is_read_in_blocks_and_reads_the_same(
    lines: list[bytes], tmp_path: Path
) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size > 4 * rawlines.BLOCK_BYTES
    blocks = []
    decode = reader.decode_block

    def counted(raws: list[bytes], data: bytes | None = None) -> Any:
        blocks.append(len(raws))
        return decode(raws, data)

    reader.decode_block = counted  # type: ignore[assignment]
    try:
        kind, (got, footer, warnings) = both_ways(path)
    finally:
        reader.decode_block = decode  # type: ignore[assignment]
    assert kind == "session" and footer is not None and warnings == []
    assert len(got) == len(lines) - 2
    assert max(blocks) > 200  # whole blocks, not 64-line batches


@pytest.mark.parametrize(
    ("where", "damage"),
    [
        (5, b'{"type":"sample","probe":"cpu","t":"soon"}'),  # the first block
        (5, b'{"type":"sample","probe":"cpu","t":1,"extra":[1]}'),  # extra not an object
        (5, b'{"type":"sample","probe":"cpu","t":1,"extra":{"n":1e999}}'),  # infinity
        (5, b'{"type":"sample","probe":"cpu","t":1,"extra":{"n":123456789012345678901}}'),
        (5, b'{"type":"sample","probe":"cpu","t":1,"extra":{"a":1'),  # cut: joins no neighbour
        (5, b'{"type":"sample","probe":"cpu","t":1,"values":{"":1}}'),  # an empty key
        (5, b'{"type":"sample","probe":"cpu","t":1,"values":{"%s":1}}' % (b"k" * 300)),
        (5, b""),  # a blank line
        (5, b'{"type":"status","probe":"cpu","t":1} {"type":"status"}'),  # two values
        (-60, b'{"type":"sample","probe":"cpu","t":1e999}'),  # the last block
        (-2, b'{"type":"sample","probe":"","t":1}'),  # the last line before the footer
    ],
)
def test_a_bad_line_is_named_as_before_wherever_it_is(
    lines: list[bytes], tmp_path: Path, where: int, damage: bytes
) -> None:
    damaged = list(lines)
    damaged[where] = damage + b"\n"
    number = where + 1 if where >= 0 else len(lines) + where + 1
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(damaged))
    kind, message = both_ways(path)
    assert kind == "error" and message.startswith(f"{path}: line {number}: "), message


def test_a_torn_last_line_is_skipped_with_a_warning(lines: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b"".join(lines[:-2]) + lines[-2][:40])
    kind, (got, footer, warnings) = both_ways(path)
    assert kind == "session" and footer is None and len(got) == len(lines) - 3
    assert warnings == [
        f"{path}: skipped a torn last line (line {len(lines) - 1}); the recording was cut off",
        f"{path}: no footer; the session ended without closing the file",
    ]


def test_over_the_memory_limit_names_the_line_as_before(
    lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weight limit the file passes two thirds in: the same line and message
    with the block bounds as with exact counting line by line."""
    path = tmp_path / "heavy.jsonl"
    path.write_bytes(b"".join(lines))
    with reference_only():
        session = load_session(path)
    total = linecheck.weight(session.header, 1 << 62) + sum(
        linecheck.weight(line, 1 << 62) for line in session.lines
    )
    monkeypatch.setattr(reader, "MAX_WEIGHT", total * 2 // 3)
    kind, message = both_ways(path)
    assert kind == "error" and "holds more data than probetop keeps in memory" in message
    number = int(message.split(": line ")[1].split(":")[0])
    assert len(lines) / 2 < number < len(lines)


def test_the_size_cap_found_while_reading_is_reported_as_before(
    lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that grows past MAX_FILE_BYTES (checked on the descriptor
    first, so the cap is lowered after that check)."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(lines))
    size = path.stat().st_size
    opened, cap = rawlines.open_recording, rawlines.MAX_FILE_BYTES

    def open_then_cap(p: Path) -> Any:
        monkeypatch.setattr(rawlines, "MAX_FILE_BYTES", cap)
        f = opened(p)
        monkeypatch.setattr(rawlines, "MAX_FILE_BYTES", size // 2)
        return f

    monkeypatch.setattr(rawlines, "open_recording", open_then_cap)
    kind, message = both_ways(path)
    assert kind == "error" and "of lines; probetop reads recordings up to" in message


def test_a_long_footer_after_the_blocks(lines: list[bytes], tmp_path: Path) -> None:
    """A footer longer than MAX_LINE_BYTES (an hour's is 2.4 MB): read."""
    footer = json.loads(lines[-1])
    footer["summaries"]["padding"] = {"rows": list(range(300_000))}
    big = json.dumps(footer, separators=(",", ":")).encode() + b"\n"
    assert len(big) > rawlines.MAX_LINE_BYTES
    path = tmp_path / "footer.jsonl"
    path.write_bytes(b"".join(lines[:-1]) + big)
    kind, (_got, got_footer, warnings) = both_ways(path)
    assert kind == "session" and got_footer == footer and warnings == []


def test_the_loader_a_step_at_a_time(lines: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(lines))
    whole = outcome(path)
    with SessionLoader(path) as loader:
        added = [loader.step(100_000) for _ in range(3)]
        assert all(n > 0 for n in added) and not loader.done
        assert len(loader.session.lines) == sum(added)
        assert loader.session.footer is None
        session = loader.finish()
    assert loader.done and loader.error is None
    got = [
        {k: (dict(v) if isinstance(v, LazyExtra) else v) for k, v in line.items()}
        for line in session.lines
    ]
    assert ("session", (got, session.footer, session.warnings)) == whole

    damaged = list(lines)
    damaged[-60] = b'{"type":"sample"}\n'
    path.write_bytes(b"".join(damaged))
    loader = SessionLoader(path)
    loader.step(100_000)  # the head is fine
    with pytest.raises(RecordingError) as caught:
        loader.finish()
    assert loader.error is caught.value
    assert str(caught.value) == outcome(path)[1]
    assert str(caught.value).startswith(f"{path}: line {len(lines) - 59}: ")
