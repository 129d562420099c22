"""Class 4 of issue 11 for recordings: `replay` and `report` validate every
line, name the first bad one, refuse what is not a regular file, and keep
memory bounded whatever the input. Each case runs the real CLI."""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from forkserver import run_probetop
from probetop.probes.record import linecheck, rawlines
from probetop.probes.record.rawlines import MAX_FILE_BYTES, MAX_LINE_BYTES
from probetop.probes.record.reader import load_session, stream_session
from probetop.probes.record.writer import SCHEMA_VERSION, RecordingError
from probetop.tui.commands.report import print_report
from record_helpers import PROBETOP
from record_memory import bomb_row, peak_rss, write_long_recording

REPO = Path(__file__).resolve().parent.parent.parent
OLD_RECORDINGS = sorted(REPO.glob("tests/data/*.jsonl")) + sorted(REPO.glob("tests/*/data/*.jsonl"))

HEADER = json.dumps(
    {
        "type": "header",
        "format": "probetop-session",
        "schema": SCHEMA_VERSION,
        "probetop": "0",
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "host": {},
        "probes": [
            {
                "id": "p",
                "kind": "system.cpu",
                "params": {},
                "metrics": [{"name": "a", "unit": "%", "description": "", "primary": True}],
            }
        ],
    }
)
SAMPLE = '{"type":"sample","probe":"p","t":1.0,"interval":1.0,"values":{"a":1.5}}'
FOOTER = '{"type":"footer","ended_at":"x","duration_s":2.0,"reason":"time","summaries":{}}'


def header_with(**changes: object) -> str:
    return json.dumps({**json.loads(HEADER), **changes})


# (name, file lines, expected words in the one-line message). The bad line is
# never the last one (a bad last line that is not JSON is a torn write).
BAD_LINES = [
    ("a JSON array", [HEADER, "[1,2]", SAMPLE], "line 2: is a JSON list, not an object"),
    ("t a string", [HEADER, '{"type":"sample","probe":"p","t":"abc","values":{}}', SAMPLE],
     "line 2: 't' is not a finite number"),
    ("t missing", [HEADER, '{"type":"sample","probe":"p","values":{}}', SAMPLE],
     "line 2: 't' is not a finite number"),
    ("t negative", [HEADER, '{"type":"sample","probe":"p","t":-1,"values":{}}', SAMPLE],
     "line 2: 't' is out of range"),
    ("t a bool", [HEADER, '{"type":"sample","probe":"p","t":true,"values":{}}', SAMPLE],
     "line 2: 't' is not a finite number"),
    ("t 1e999", [HEADER, '{"type":"sample","probe":"p","t":1e999,"values":{}}', SAMPLE],
     "line 2: 't' is not a finite number"),
    ("NaN value", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{"a":NaN}}', SAMPLE],
     "line 2: is not valid JSON"),
    ("string value", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{"a":"1"}}', SAMPLE],
     "line 2: values['a'] is not a finite number or null"),
    ("list value", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{"a":[1]}}', SAMPLE],
     "line 2: values['a'] is not a finite number or null"),
    ("bool value", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{"a":false}}', SAMPLE],
     "line 2: values['a'] is not a finite number or null"),
    ("huge value", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{"a":1e200}}', SAMPLE],
     "line 2: values['a'] is out of range"),
    ("huge int", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{"a":' + "9" * 400 + "}}",
                  SAMPLE], "line 2: values['a'] is not a finite number or null"),
    ("values a list", [HEADER, '{"type":"sample","probe":"p","t":1,"values":[1]}', SAMPLE],
     "line 2: 'values' is not an object"),
    ("extra a string", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{},"extra":"x"}',
                        SAMPLE], "line 2: 'extra' is not an object"),
    ("probe a number", [HEADER, '{"type":"sample","probe":7,"t":1,"values":{}}', SAMPLE],
     "line 2: 'probe' is not a non-empty string"),
    ("probe id too long", [HEADER, '{"type":"sample","probe":"' + "p" * 300 + '","t":1}', SAMPLE],
     "line 2: 'probe' is longer than 256"),
    ("status level a number", [HEADER, '{"type":"status","probe":"p","t":1,"level":3,'
                               '"message":"m"}', SAMPLE], "line 2: 'level' is not a string"),
    ("status message null", [HEADER, '{"type":"status","probe":"p","t":1,"level":"info",'
                             '"message":null}', SAMPLE], "line 2: 'message' is not a string"),
    ("probe line params a list", [HEADER, '{"type":"probe","t":1,"id":"q","kind":"cpu",'
                                  '"params":[],"metrics":[]}', SAMPLE],
     "line 2: 'params' is not an object"),
    ("probe line metric without name", [HEADER, '{"type":"probe","t":1,"id":"q","kind":"cpu",'
                                        '"params":{},"metrics":[{"unit":"x"}]}', SAMPLE],
     "line 2: 'name' is not a non-empty string"),
    ("no type", [HEADER, '{"probe":"p","t":1}', SAMPLE], "line 2: has no 'type'"),
    ("second header", [HEADER, HEADER, SAMPLE], "line 2: is a second header"),
    ("line after the footer", [HEADER, FOOTER, SAMPLE], "line 3: follows the footer"),
    ("footer summaries a list", [HEADER, '{"type":"footer","summaries":[]}', SAMPLE],
     "line 2: 'summaries' is not an object"),
    ("footer duration a string", [HEADER, '{"type":"footer","duration_s":"2"}', SAMPLE],
     "line 2: 'duration_s' is not a finite number"),
    ("footer error a number", [HEADER, '{"type":"footer","errors":{"p":1}}', SAMPLE],
     "line 2: errors['p'] is not a string"),
    ("middle line not JSON", [HEADER, "{oops", SAMPLE], "line 2: is not valid JSON"),
    ("middle line binary", [HEADER, "\udcff\udcfe", SAMPLE], "line 2: is not UTF-8 text"),
    ("deeply nested", [HEADER, "[" * 100_000 + "]" * 100_000, SAMPLE],
     "line 2: is not valid JSON (nested too deeply)"),
    ("extra holds 1e999", [HEADER, '{"type":"sample","probe":"p","t":1,"values":{},'
                           '"extra":{"x":[1e999]}}', SAMPLE], "line 2: holds a number too large"),
    ("schema a string", [header_with(schema="1"), SAMPLE], "line 1: 'schema' is \"1\""),
    ("schema true", [header_with(schema=True), SAMPLE], "line 1: 'schema' is true"),
    ("schema 0", [header_with(schema=0), SAMPLE], "line 1: 'schema' is 0"),
    ("schema newer", [header_with(schema=SCHEMA_VERSION + 1), SAMPLE], "newer than this"),
    ("header probes not a list", [header_with(probes={"a": 1}), SAMPLE],
     "line 1: 'probes' is not an array"),
    ("header command not strings", [header_with(command=[1]), SAMPLE],
     "line 1: 'command' is not an array of strings"),
    ("header host a string", [header_with(host="h"), SAMPLE], "line 1: 'host' is not an object"),
    ("too many probes", [header_with(probes=[{"id": f"p{i}", "kind": "k"} for i in range(1100)])],
     "line 1: more than 1024 probes"),
    ("not a recording", ["a,b,c", SAMPLE], "not a probetop recording (first line is not JSON)"),
    ("another JSON format", ['{"format":"other"}', SAMPLE], "not a probetop recording"),
    ("empty", [""], "empty file"),
]  # fmt: skip


def _write(path: Path, rows: list[str], end: str = "\n") -> Path:
    path.write_bytes(end.join(rows).encode("utf-8", "surrogateescape") + end.encode())
    return path


def run_cli(
    args: list[str], timeout: float = 60, *, fork: bool = False
) -> subprocess.CompletedProcess[str]:
    """``fork``: forked from an interpreter that has imported the CLI
    (tests/forkserver.py), for tables that start one whole process too."""
    if fork:
        return run_probetop(args, timeout=timeout)
    return subprocess.run([*PROBETOP, *args], capture_output=True, text=True, timeout=timeout)


def one_line_exit_2(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("probetop: error: ") and words in lines[0], (words, lines[0])


@pytest.mark.parametrize("name, rows, words", BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_bad_line_is_named(tmp_path: Path, name: str, rows: list[str], words: str) -> None:
    path = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(RecordingError) as caught:
        load_session(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and words in message, message
    assert "\n" not in message


@pytest.mark.parametrize("command", ["replay --headless", "report", "report --json"])
def test_cli_bad_lines_exit_2_with_one_line(tmp_path: Path, command: str) -> None:
    """A subprocess per case is slow: the whole table, one process each."""
    for i, (name, rows, words) in enumerate(BAD_LINES[:: 3 if command != "report" else 1]):
        path = _write(tmp_path / f"{len(name)}.jsonl", rows)
        one_line_exit_2(run_cli([*command.split(), str(path)], fork=i > 0), words)


def test_not_regular_files_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = {
        "/dev/zero": "is a character device, not a recording file",
        "/dev/urandom": "is a character device, not a recording file",
        str(fifo): "is a FIFO (named pipe), not a recording file",
        str(tmp_path): "is a directory, not a recording",
        "/proc/self/status": "is on a proc filesystem, not a recording file",
        "/proc/self/mem": "is on a proc filesystem, not a recording file",
        "/sys/kernel/notes": "is on a sysfs filesystem, not a recording file",
        "/nonexistent/x.jsonl": "no such file",
    }
    for i, (target, words) in enumerate(cases.items()):
        for command in (["replay", "--headless"], ["report"], ["replay"]):
            started = time.monotonic()
            one_line_exit_2(run_cli([*command, target], timeout=30, fork=i > 0), words)
            assert time.monotonic() - started < 10


def test_fifo_with_a_writer_that_never_writes_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    holder = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    holder.start()  # blocks until someone opens it for reading
    started = time.monotonic()
    try:
        with pytest.raises(RecordingError, match="FIFO"):
            load_session(fifo)
        assert time.monotonic() - started < 2
    finally:
        # The reader's own non-blocking open releases the holder only when
        # the holder was already waiting; on a loaded machine it often was
        # not yet, and a 5 s join (and a thread blocked for the worker's
        # life) followed. A reader opened here lets its open return; again
        # until it has (it may not have reached its open at the first).
        deadline = time.monotonic() + 5
        while holder.is_alive() and time.monotonic() < deadline:
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            holder.join(timeout=0.05)
        assert not holder.is_alive()


def test_unreadable_file_as_nobody(tmp_path: Path) -> None:
    from record_helpers import as_nobody

    path = _write(tmp_path / "private.jsonl", [HEADER, SAMPLE])
    path.chmod(0o600)
    tmp_path.chmod(0o755)
    kind, message = as_nobody(lambda p: str(load_session(p)), str(path))
    assert kind == "RecordingError" and "cannot read: Permission denied" in message


def test_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:
        f.write((HEADER + "\n").encode())
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk
    started = time.monotonic()
    one_line_exit_2(run_cli(["replay", "--headless", str(path)]), "probetop reads recordings up to")
    assert time.monotonic() - started < 10


def test_long_line_is_refused_after_reading_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    with path.open("wb") as f:
        f.write((HEADER + "\n").encode())
        f.write(b'{"type":"sample","probe":"p","t":1,"values":{},"extra":{"x":"')
        f.write(b"y" * (MAX_LINE_BYTES + 10) + b'"}}\n')
    with pytest.raises(RecordingError, match="line 2 is longer than 1 MiB"):
        load_session(path)
    ok = tmp_path / "ok.jsonl"  # just under the cap is fine
    prefix = b'{"type":"sample","probe":"p","t":1,"values":{},"extra":{"x":"'
    body = b"y" * (MAX_LINE_BYTES - len(prefix) - 3)
    ok.write_bytes((HEADER + "\n").encode() + prefix + body + b'"}}\n')
    assert len(load_session(ok).samples()) == 1


def test_torn_last_lines_are_skipped_with_a_warning(tmp_path: Path) -> None:
    for tail in (SAMPLE[:20], "\0" * 4096, "\udcff", SAMPLE[:-1] + "\n"):
        path = tmp_path / "torn.jsonl"
        path.write_bytes(f"{HEADER}\n{SAMPLE}\n{tail}".encode("utf-8", "surrogateescape"))
        session = load_session(path)
        assert len(session.samples()) == 1
        assert any("skipped a torn last line (line 3)" in w for w in session.warnings)
    # a last line that is JSON but wrong is not a torn write: an error
    path = _write(tmp_path / "bad-last.jsonl", [HEADER, SAMPLE, '{"type":"sample","t":"x"}'])
    with pytest.raises(RecordingError, match="line 3"):
        load_session(path)


def test_unknown_line_types_are_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path / "future.jsonl", [HEADER, '{"type":"marker","t":1}', SAMPLE, FOOTER])
    session = load_session(path)
    assert len(session.samples()) == 1
    assert session.warnings == [f"{path}: skipped 1 lines of a type this probetop ignores"]


def test_a_probe_without_samples_says_so_in_the_report(tmp_path: Path) -> None:
    """A recording cut before its first sample (only the header, or no sample
    lines) names each probe and says it recorded nothing."""
    demo = Path(__file__).parent.parent / "data" / "demo_session.jsonl"
    lines = demo.read_text().splitlines()
    kept = [ln for ln in lines if json.loads(ln).get("type") != "sample"]
    for rows in (lines[:1], kept):
        path = _write(tmp_path / "nothing.jsonl", rows)
        session = load_session(path)
        assert not session.samples()
        out = io.StringIO()
        assert print_report(session, charts=True, out=out) == 0
        text = out.getvalue()
        sections = text.count("\n== ")
        assert sections == len(session.probes) > 0
        assert text.count("no samples: this probe recorded no measurement") == sections


@pytest.mark.parametrize("path", OLD_RECORDINGS, ids=[p.name for p in OLD_RECORDINGS])
def test_old_recordings_still_read(path: Path) -> None:
    session = load_session(path)
    assert session.warnings == []
    assert session.footer is not None and session.samples()
    records = list(session.records())
    assert len(records) >= len(session.lines)
    out = io.StringIO()
    assert print_report(session, charts=True, all_charts=True, out=out) == 0
    assert print_report(session, as_json=True, out=io.StringIO()) == 0


def test_old_recordings_exist() -> None:
    assert len(OLD_RECORDINGS) >= 2


# -- memory ----------------------------------------------------------------------------


def test_memory_of_a_large_valid_recording(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    write_long_recording(path, 40 << 20)
    proc, peak = peak_rss(["report", "--no-charts", "--json", str(path)], timeout=120)
    assert proc.returncode == 0, proc.stderr
    # 40 MiB on disk: about 190 MiB in memory (docs/reliability-record.md)
    assert peak < 320, peak


def test_memory_of_hostile_files_is_bounded(tmp_path: Path) -> None:
    """/dev/zero, a 64 MiB line, and a file of empty objects that would need
    GiBs: refused, with the peak RSS under the documented bound."""
    line = tmp_path / "line.jsonl"
    with line.open("wb") as f:
        f.write((HEADER + "\n").encode())
        f.truncate(64 << 20)
    for target, limit in (("/dev/zero", 80), (str(line), 80)):
        proc, peak = peak_rss(["replay", "--headless", target], timeout=30)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert peak < limit, (target, peak)
    bomb = tmp_path / "objects.jsonl"
    with bomb.open("wb") as f:
        f.write((HEADER + "\n").encode())
        for i in range(60):  # 2 bytes of {} are 64 of memory: 60 MiB would be ~2 GiB
            f.write(bomb_row("objects", i))
    started = time.monotonic()
    proc, peak = peak_rss(["replay", "--headless", str(bomb)], timeout=120)
    one_line_exit_2(proc, "more data than probetop keeps in memory")
    assert peak < 1024, peak
    assert time.monotonic() - started < 60


def test_limits_are_what_the_docs_say() -> None:
    assert rawlines.MAX_LINE_BYTES == 1 << 20
    assert rawlines.MAX_FILE_BYTES == 256 << 20
    assert linecheck.MAX_WEIGHT == 20_000_000


def test_a_long_runs_footer_over_the_line_cap_is_read(tmp_path: Path) -> None:
    """The footer grows with the run (an hour of demo: 2.4 MB); only a footer
    may pass the 1 MiB line cap, up to MAX_FOOTER_BYTES."""
    rows = (Path(__file__).resolve().parents[1] / "data" / "demo_session.jsonl").read_text()
    lines = rows.splitlines()
    footer = json.loads(lines[-1])
    footer["summaries"]["cpu"] = {"intervals": [{"t": i, "eps": 2900.5} for i in range(60_000)]}
    text = json.dumps(footer, separators=(",", ":"))
    assert len(text) > rawlines.MAX_LINE_BYTES
    big = tmp_path / "long.jsonl"
    big.write_text("\n".join([*lines[:-1], text]) + "\n")
    session = load_session(big)
    assert (
        session.footer is not None
        and len(session.footer["summaries"]["cpu"]["intervals"]) == 60_000
    )
    # the same size as a sample line is still refused
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join([lines[0], text.replace('"type":"footer"', '"type":"sample"', 1), lines[-1]])
        + "\n"
    )
    with pytest.raises(RecordingError, match="longer than 1 MiB"):
        load_session(bad)


@pytest.mark.parametrize("name", ["live.jsonl", "live.jsonl.zst"])
def test_a_recording_still_being_written_is_not_called_cut_off(tmp_path: Path, name: str) -> None:
    """Read while a real probetop records it, a file has no footer and maybe a
    torn last line or an open zstd frame: that is where the writer has got
    to, not an accident. It said "the session ended without closing the
    file" of a session still running; now one note names the writer, and
    the same file once finished reads without a warning."""
    path = tmp_path / name
    args = ["cpu", "--time", "30", "--interval", "0.1", "--headless", "--record", str(path)]
    proc = subprocess.Popen(
        [*PROBETOP, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.stat().st_size > 2000:
                break
            time.sleep(0.1)
        for read in (
            lambda: load_session(path).warnings,
            lambda: _streamed_warnings(path),
        ):
            warnings = read()
            assert len(warnings) == 1, warnings
            assert f"still being recorded by probetop PID {proc.pid}" in warnings[0]
            assert "ended without closing" not in warnings[0]
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 143  # 128 + SIGTERM
    assert load_session(path).warnings == []


def _streamed_warnings(path: Path) -> list[str]:
    with stream_session(path) as stream:
        for _ in stream.records():
            pass
        return stream.warnings


@pytest.mark.parametrize(
    ("suffix", "compressor", "name"),
    [(".gz", "gzip", "gzip"), (".xz", "lzma", "xz"), (".bz2", "bz2", "bzip2")],
)
def test_a_recording_compressed_by_another_tool_is_named(
    tmp_path: Path, suffix: str, compressor: str, name: str
) -> None:
    """`gzip s.jsonl; probetop report s.jsonl.gz` said "not a probetop
    recording (first line is not JSON)"; it says which compressor and what
    to run instead, in both readers (load_session and export's stream)."""
    import importlib

    compress = importlib.import_module(compressor).compress
    recording = Path(__file__).parents[1] / "data" / "tui_session.jsonl"
    path = tmp_path / f"my rec.jsonl{suffix}"
    path.write_bytes(compress(recording.read_bytes()))

    def streamed(p: Path) -> None:
        with stream_session(p) as stream:
            list(stream.records())

    for read in (load_session, streamed):
        with pytest.raises(RecordingError) as caught:
            read(path)
        message = str(caught.value)
        assert f"{name}-compressed" in message, message
        assert f"'{path}'" in message, message  # quoted for the shell: the name has a space


def test_a_byte_order_mark_is_named_with_its_remedy(tmp_path: Path) -> None:
    """A recording saved by an editor that put a UTF-8 BOM first said only
    "first line is not JSON"; the message names the mark and a command that
    removes it, and that command gives back a readable recording."""
    recording = Path(__file__).parents[1] / "data" / "tui_session.jsonl"
    path = tmp_path / "edited.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + recording.read_bytes())
    with pytest.raises(RecordingError, match="byte-order mark") as caught:
        load_session(path)
    command = str(caught.value).split("remove it: ", 1)[1]
    subprocess.run(command, shell=True, check=True, cwd=tmp_path)
    assert load_session(path).footer is not None


def test_report_large_numbers_are_never_in_scientific_notation() -> None:
    """The report's table printed read_iops as '1.066e+04' beside '9107'
    and '30,897,773': every large magnitude reads as a plain number."""
    from probetop.tui.commands.report import _fmt

    for value in (0.001234, 1.5, 9107.0, 9999.9, 10660.4, 99999.0, 1.2e5, 3.1e7, -2.5e12):
        assert "e" not in _fmt(value), (value, _fmt(value))
    assert _fmt(10660.4) == "10,660" and _fmt(9999.9) == "10,000" and _fmt(9107.0) == "9107"
