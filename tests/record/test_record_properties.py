"""Property tests (hypothesis) of the recording reader and writer.

Reader: recordings built from real lines (tests/data/demo_session.jsonl)
and then mutated -- fields set to any JSON value or deleted, lines cut,
padded past the line cap, replaced by binary, swapped, duplicated -- and
wholly random bytes. Whatever the file, ``load_session`` returns a Session
whose every record has the documented types (and whose report prints), or
raises RecordingError with a one-line message naming the bad line; never
another exception; traced memory stays under a fixed bound.

Writer: ``LineFile`` on a real small tmpfs with any amount of room left:
the file is always exactly the first whole lines, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import re
import tempfile
import tracemalloc
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from probetop.probes.core.sample import Announce, Sample, Status
from probetop.probes.record import linecheck, rawlines, reader
from probetop.probes.record.codec import RecordingError
from probetop.probes.record.linefile import LineFile, WriteFailed
from probetop.probes.record.reader import Session, load_session
from probetop.tui.commands.report import print_report
from probetop.tui.main import main

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo_session.jsonl"
ROWS = DEMO.read_text().splitlines()
HEADER = json.loads(ROWS[0])
BODY = [json.loads(row) for row in ROWS[1:-1]]
FOOTER = json.loads(ROWS[-1])
# A few of each kind keeps the examples small and varied.
KINDS: dict[str, list[dict[str, Any]]] = {}
for _line in BODY:
    KINDS.setdefault(_line["type"], []).append(_line)
EXAMPLES = [line for lines in KINDS.values() for line in lines[:6]]

# Small caps so that hypothesis reaches them with small inputs.
SMALL_LINE = 32 * 1024  # the demo's longest line is 19 KiB
SMALL_WEIGHT = 20_000
SMALL_FILE = 512 * 1024
MEMORY_BOUND = 16 << 20  # traced bytes while reading, whatever the file

FILE_LEVEL = (  # messages about the whole file, not one line
    "no such file",
    "empty file",
    "not a probetop recording (first line is not JSON)",
    "probetop reads recordings up to",
    "newer than this probetop reads",
    "-compressed; probetop reads plain or zstandard",  # gzip, xz, bzip2, lz4 by magic
    "starts with a UTF-8 byte-order mark",
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    # edges the reader must handle: 1e999 (read as infinity), 64-bit limits, huge ints
    st.sampled_from([math.inf, -math.inf, 1e308, 1e101, -0.0, 5e-324, 2**64, -(2**63), 10**400]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
field_names = st.sampled_from(
    ["type", "probe", "t", "interval", "values", "extra", "level", "message", "id", "kind",
     "params", "metrics", "reference_command", "duration_s", "summaries", "errors", "reason",
     "format", "schema", "probes", "command", "host", "started_at"]
)  # fmt: skip


@st.composite
def mutated_object(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with fields set to any JSON value, deleted, or nested ones changed."""
    obj = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["set", "delete", "nested"]))
        own = st.sampled_from(sorted(obj) or ["type"])
        key = draw(st.one_of(own, own, field_names))
        if action == "set":
            obj[key] = draw(json_values)
        elif action == "delete":
            obj.pop(key, None)
        elif isinstance(obj.get(key), dict) and obj[key]:
            inner = draw(st.sampled_from(sorted(obj[key])))
            obj[key][inner] = draw(json_values)
        elif isinstance(obj.get(key), list) and obj[key]:
            obj[key][draw(st.integers(0, len(obj[key]) - 1))] = draw(json_values)
    return obj


def dumps(obj: Any) -> bytes:
    """Compact JSON; NaN stays the non-JSON ``NaN``, infinities are written
    ``1e999``, which is valid JSON and reads back as infinity."""
    text = json.dumps(obj, separators=(",", ":"))
    return text.replace("Infinity", "1e999").encode()


@st.composite
def damaged_line(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    """``base`` as one line (without its newline), damaged one way."""
    how = draw(st.sampled_from(["mutated", "mutated", "mutated", "cut", "huge", "binary", "json"]))
    if how == "mutated":
        return dumps(draw(mutated_object(base)))
    if how == "cut":
        raw = dumps(base)
        return raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    if how == "huge":
        pad = "x" * draw(st.integers(SMALL_LINE - 300, SMALL_LINE * 3))
        return dumps(dict(base, extra={"pad": pad}))
    if how == "binary":
        return draw(st.binary(max_size=200)).replace(b"\n", b"")
    return dumps(draw(json_values))


@st.composite
def recordings(draw: st.DrawFn) -> bytes:
    """A whole file: real lines, most files with one or two of them damaged
    (a file with many is refused at the first and teaches nothing more)."""
    if draw(st.integers(0, 14)) == 0:
        return draw(st.binary(max_size=600))
    bases = [HEADER, *draw(st.lists(st.sampled_from(EXAMPLES), max_size=8))]
    if draw(st.booleans()):
        bases.append(FOOTER)
    rows = [dumps(base) for base in bases]
    damaged = draw(st.sampled_from([0, 1, 1, 1, 2]))
    for _ in range(damaged):
        i = draw(st.integers(0, len(rows) - 1))
        rows[i] = draw(damaged_line(bases[i]))
    if len(rows) > 2 and draw(st.integers(0, 4)) == 0:  # swap or duplicate two lines
        i, j = draw(st.integers(1, len(rows) - 1)), draw(st.integers(1, len(rows) - 1))
        if draw(st.booleans()):
            rows[i], rows[j] = rows[j], rows[i]
        else:
            rows[j] = rows[i]
    data = b"\n".join(rows)
    return data if draw(st.integers(0, 4)) == 0 else data + b"\n"


@contextlib.contextmanager
def small_caps() -> Iterator[None]:
    saved = rawlines.MAX_LINE_BYTES, reader.MAX_WEIGHT, rawlines.MAX_FILE_BYTES
    rawlines.MAX_LINE_BYTES, reader.MAX_WEIGHT, rawlines.MAX_FILE_BYTES = (
        SMALL_LINE,
        SMALL_WEIGHT,
        SMALL_FILE,
    )
    try:
        yield
    finally:
        rawlines.MAX_LINE_BYTES, reader.MAX_WEIGHT, rawlines.MAX_FILE_BYTES = saved


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_session(session: Session) -> None:
    """Every record has the types the panes and the report rely on."""
    for t, record in session.records():
        assert is_number(t) and 0 <= t <= linecheck.MAX_T
        if isinstance(record, Sample):
            assert isinstance(record.probe, str) and record.probe
            assert is_number(record.interval_s)
            assert all(
                isinstance(k, str) and (v is None or is_number(v)) for k, v in record.values.items()
            )
            # A Mapping (Sample's type); load_session's is a LazyExtra, parsed here.
            assert isinstance(record.extra, Mapping)
            assert isinstance(dict(record.extra), dict)
        elif isinstance(record, Status):
            assert isinstance(record.level, str) and isinstance(record.message, str)
        else:
            assert isinstance(record, Announce)
            assert isinstance(record.info.get("params", {}), dict)
            for metric in record.info.get("metrics", []):
                assert isinstance(metric["name"], str)
    assert is_number(session.duration_s)
    header = session.header
    assert isinstance(header.get("host", {}), dict)
    assert all(isinstance(arg, str) for arg in header.get("command", []))
    for info in session.probes.values():
        assert isinstance(info.get("params", {}), dict)
        assert isinstance(info.get("kind"), str)
        assert info.get("reference_command") is None or isinstance(info["reference_command"], str)
        for metric in info.get("metrics", []):
            assert isinstance(metric, dict) and isinstance(metric["name"], str)
            assert isinstance(metric.get("unit", ""), str)
            assert isinstance(metric.get("primary", False), bool)
    footer = session.footer or {}
    assert all(v is None or isinstance(v, dict) for v in footer.get("summaries", {}).values())
    assert all(v is None or isinstance(v, str) for v in footer.get("errors", {}).values())
    assert footer.get("duration_s") is None or is_number(footer["duration_s"])
    out = io.StringIO()
    assert print_report(session, charts=False, out=out) == 0
    doc = io.StringIO()
    assert print_report(session, as_json=True, out=doc) == 0
    json.loads(doc.getvalue(), parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))


def check_error(path: Path, error: RecordingError) -> None:
    message = str(error)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    if not any(words in message for words in FILE_LEVEL):
        # a line, or (a file that starts with zstd's magic) the byte offset of its bad block
        assert re.search(r"\b(line|byte) \d+\b", message), message


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=recordings())
@example(data=b"[1,2]\n")
@example(data=b'\x04"M\x18')  # lz4's magic: named as lz4, no line to name
@example(data=dumps(HEADER) + b'\n{"t":"abc"}\n' + dumps(FOOTER) + b"\n")
@example(data=dumps(dict(HEADER, schema="1")) + b"\n")
@example(data=dumps(HEADER) + b"\n" + b"\0" * 9000)
@example(data=b"(\xb5/\xfd\n" + dumps(HEADER) + b"\n")  # zstd magic, then plain lines
def test_reader_returns_a_valid_session_or_names_the_line(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp, small_caps():
        path = Path(tmp) / "rec.jsonl"
        path.write_bytes(data)
        tracemalloc.start()
        try:
            try:
                session = load_session(path)
            except RecordingError as exc:
                check_error(path, exc)
                event("refused: " + re.sub(r"^\S+: (line \d+: )?", "", str(exc))[:24])
                return
            finally:
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
            assert peak < MEMORY_BOUND, peak
            check_session(session)
            event(f"session ({'torn' if any('torn' in w for w in session.warnings) else 'whole'})")
        finally:
            if tracemalloc.is_tracing():
                tracemalloc.stop()


SAMPLE_LINE = next(line for line in BODY if line["type"] == "sample" and line.get("extra"))
STATUS_LINE = KINDS["status"][0]
PROBE_LINE = {"type": "probe", "t": 1.0, **HEADER["probes"][-1]}
FIELDS: dict[str, tuple[dict[str, Any], list[tuple[Any, ...]]]] = {
    "header": (HEADER, [("format",), ("schema",), ("probetop",), ("started_at",), ("command",),
                        ("command", 0), ("host",), ("probes",), ("probes", 0), ("probes", 0, "id"),
                        ("probes", 0, "kind"), ("probes", 0, "params"), ("probes", 0, "metrics"),
                        ("probes", 0, "metrics", 0), ("probes", 0, "metrics", 0, "name"),
                        ("probes", 0, "metrics", 0, "unit"), ("probes", 0, "metrics", 0, "primary"),
                        ("probes", 0, "reference_command")]),
    "sample": (SAMPLE_LINE, [("type",), ("probe",), ("t",), ("interval",), ("values",),
                             ("values", sorted(SAMPLE_LINE["values"])[0]), ("extra",)]),
    "status": (STATUS_LINE, [("type",), ("probe",), ("t",), ("level",), ("message",)]),
    "probe": (PROBE_LINE, [("type",), ("t",), ("id",), ("kind",), ("params",), ("metrics",),
                           ("metrics", 0), ("metrics", 0, "name"), ("metrics", 0, "primary"),
                           ("reference_command",)]),
    "footer": (FOOTER, [("duration_s",), ("reason",), ("ended_at",), ("summaries",),
                        ("summaries", sorted(FOOTER["summaries"])[0]), ("errors",),
                        ("errors", "x")]),
}  # fmt: skip


def set_path(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(obj))
    node = copy
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return copy


def field_case(kind: str, path: tuple[Any, ...], value: Any) -> tuple[bytes, int]:
    """A recording whose ``kind`` line has ``value`` at ``path``; the file
    and the number of that line."""
    damaged = set_path(FIELDS[kind][0], path, value)
    if kind == "header":
        lines, number = [damaged, SAMPLE_LINE, FOOTER], 1
    elif kind == "footer":
        lines, number = [HEADER, SAMPLE_LINE, damaged], 3
    else:
        lines, number = [HEADER, damaged, SAMPLE_LINE, FOOTER], 2
    return b"".join(dumps(line) + b"\n" for line in lines), number


@st.composite
def one_field_damaged(draw: st.DrawFn) -> tuple[bytes, int]:
    """A recording whose one line has one field the reader uses set to any
    JSON value."""
    kind = draw(st.sampled_from(sorted(FIELDS)))
    return field_case(kind, draw(st.sampled_from(FIELDS[kind][1])), draw(json_values))


INF = math.inf


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=one_field_damaged())
@example(case=field_case("header", ("probes", 0, "params"), {"x": INF}))
@example(case=field_case("header", ("host",), {"logical_cpus": -INF}))
@example(case=field_case("header", ("schema",), "1"))
@example(case=field_case("sample", ("extra",), {"x": [1, INF]}))
@example(case=field_case("sample", ("values", "load1"), INF))
@example(case=field_case("sample", ("values", "load1"), 10**400))
@example(case=field_case("sample", ("t",), "abc"))
@example(case=field_case("footer", ("summaries", "cpu"), {"x": INF}))
@example(case=field_case("footer", ("duration_s",), INF))
def test_every_field_is_checked(case: tuple[bytes, int]) -> None:
    """Any value in any field the reader uses: a Session whose records all
    have the right types, or an error naming exactly that line."""
    data, number = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rec.jsonl"
        path.write_bytes(data)
        try:
            session = load_session(path)
        except RecordingError as exc:
            message = str(exc)
            assert "\n" not in message
            if "newer than this probetop" not in message:
                assert f"line {number}:" in message or (
                    number == 1 and "not a probetop recording" in message
                ), message
            event("refused")
            return
        check_session(session)
        event("accepted")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=recordings(), command=st.sampled_from(["report", "replay", "report --json"]))
def test_cli_exits_0_or_2_with_a_message(data: bytes, command: str) -> None:
    """The real entry point, in process: exit 0 with a report, or exit 2 with
    one ``probetop: error:`` line; charts included."""
    with tempfile.TemporaryDirectory() as tmp, small_caps():
        path = Path(tmp) / "rec.jsonl"
        path.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        args = [*command.split(), str(path)]
        if command == "replay":
            args.insert(1, "--headless")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
        errors = [line for line in err.getvalue().splitlines() if "error" in line]
        if code == 2:
            assert len(errors) == 1 and errors[0].startswith("probetop: error: "), err.getvalue()
        else:
            assert code == 0 and not errors, (code, err.getvalue())
            assert out.getvalue()


# -- writer ----------------------------------------------------------------------------

lines_strategy = st.lists(
    st.binary(max_size=3000).map(lambda b: b.replace(b"\n", b"") + b"\n"), min_size=1, max_size=40
)


def _tmpfs_dir() -> Path | None:
    """A 128 KiB tmpfs shared by the writer property's examples (root only)."""
    if os.geteuid() != 0:
        return None
    import subprocess

    where = Path(tempfile.mkdtemp(prefix="probetop-linefile-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(where)], check=True)
    return where


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(lines_strategy, min_size=1, max_size=12), room=st.integers(0, 140_000))
def test_line_file_is_always_whole_lines(batches: list[list[bytes]], room: int) -> None:
    mount = MOUNT
    if mount is None:
        import pytest

        pytest.skip("needs root to mount a tmpfs")
    for child in mount.iterdir():
        child.unlink()
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    (mount / "ballast").write_bytes(b"\0" * max(0, free - room))
    fd = os.open(mount / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    file = LineFile(fd)
    flat = [line for batch in batches for line in batch]
    try:
        for batch in batches:
            file.write_lines(b"".join(batch))
    except WriteFailed as exc:
        assert not exc.torn
    finally:
        file.close()
    assert (mount / "f").read_bytes() == b"".join(flat[: file.lines])
    assert file.offset == (mount / "f").stat().st_size


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """The kernel's own short write: with RLIMIT_FSIZE at ``limit``, a write
    crossing it writes the bytes up to it and returns that short count; the
    next fails with EFBIG (SIGXFSZ ignored, as the recorder's process does
    not get to choose). Any user may lower its soft limit and restore it."""
    import resource
    import signal

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(lines_strategy, min_size=1, max_size=8), data=st.data())
def test_a_real_short_write_leaves_whole_lines(batches: list[list[bytes]], data: Any) -> None:
    """The file may grow only to a limit drawn inside what is written, so
    most examples end in a write the kernel cut short in the middle of a
    line (the tmpfs property above: every failed write wrote 0 bytes, and it
    passed with the truncation back removed). The file still holds exactly
    the whole lines counted, and the writer's offset is its size."""
    flat = [line for batch in batches for line in batch]
    total = sum(map(len, flat))
    limit = data.draw(st.integers(0, total - 1), label="limit")
    ends = {0}
    for line in flat:
        ends.add(max(ends) + len(line))
    torn = limit not in ends  # the limit falls inside a line
    event("limit inside a line" if torn else "limit at a line end")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        file = LineFile(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        failed = None
        with file_size_limit(limit):
            try:
                for batch in batches:
                    file.write_lines(b"".join(batch))
            except WriteFailed as exc:
                failed = exc
            finally:
                file.close()
        assert failed is not None and failed.error.errno == errno.EFBIG and not failed.torn
        assert path.read_bytes() == b"".join(flat[: file.lines])
        assert file.offset == path.stat().st_size <= limit
        # Every line that fitted whole under the limit was kept.
        assert file.offset == max(end for end in ends if end <= limit)


def test_a_short_write_in_the_middle_of_a_line_is_cut_back() -> None:
    """By hand: 3 lines of 4 bytes, room for 6: the kernel writes 6 bytes
    ("aaa\nbb"), the file is cut back to the first line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        file = LineFile(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        with file_size_limit(6), contextlib.suppress(WriteFailed):
            file.write_lines(b"aaa\nbbb\nccc\n")
        file.close()
        assert path.read_bytes() == b"aaa\n"
        assert (file.lines, file.offset) == (1, 4)


MOUNT: Path | None = None


def setup_module() -> None:
    global MOUNT
    MOUNT = _tmpfs_dir()


def teardown_module() -> None:
    if MOUNT is not None:
        import subprocess

        subprocess.run(["umount", "-l", str(MOUNT)], check=False)
        os.rmdir(MOUNT)
