"""The recorder's and reader's fast paths give exactly what the stdlib paths give.

The fast paths (orjson) are only taken when they provably agree with the
reference code (``json`` with redaction; the reader's full checks); these
tests feed both the same generated and real input and compare bytes and
objects, so a rule the fast path misses fails here.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from probetop.probes.record import RecordingError, fastpath, load_session, rawlines
from probetop.probes.record.codec import _fast_line, _stdlib_line, dump_line_bytes
from probetop.probes.record.linecheck import LazyExtra
from record_helpers import reference_only
from test_record_properties import recordings, small_caps

DATA = Path(__file__).resolve().parent.parent / "data"

# Strings that hit redaction rules, next to plain ones and non-ASCII.
words = st.sampled_from(
    ["read_iops", "t", "probe", "password", "token", "Authorization: Bearer x", "-u",
     "--user", "bob:pw", "https://u:p@h/?x=1&token=abc", "http:127.0.0.1:80/a?ms=20",
     "headers", "data", "command", "é", "x\ny", "1e-05", "0.00001", "", "api_key", "-"]
)  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e-3, max_value=1e-3),
    st.sampled_from([1e-5, 1.5e-7, 1e16, 1e22, -0.0, 5e-324, 0.0001, 1.00001]),
    words,
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(words, st.text(max_size=8)), inner, max_size=4),
    ),
    max_leaves=16,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.one_of(words, st.text(max_size=8)), values, max_size=6))
@example({"\x7f": None})  # ASCII, but json writes it \u007f (found by hypothesis)
@example({"k": "a\x7fb"})
def test_the_fast_line_is_the_stdlib_line_or_nothing(obj: dict[str, Any]) -> None:
    fast = _fast_line(obj)
    reference = _stdlib_line(obj)
    assert fast is None or fast == reference
    assert dump_line_bytes(obj) == reference


def test_floats_in_every_decade_are_spelled_as_python_does() -> None:
    for exp in range(-30, 31):
        for mantissa in (1.0, 1.5, 2.2250738585072014, 9.999999):
            for v in (mantissa * 10.0**exp, -mantissa * 10.0**exp, round(mantissa * 10.0**exp, 6)):
                assert dump_line_bytes({"v": v}) == _stdlib_line({"v": v}), v
    assert dump_line_bytes({"v": math.nan, "w": -math.inf}) == b'{"v":null,"w":null}\n'


def test_a_real_recording_takes_the_fast_path_byte_for_byte() -> None:
    """A real session's lines (every line but the header, which holds a
    command line) are written by orjson, and identically."""
    lines = (DATA / "tui_session.jsonl").read_bytes().splitlines(keepends=True)
    fast = 0
    for line in lines:
        obj = json.loads(line)
        out = _fast_line(obj)
        fast += out is not None
        assert dump_line_bytes(obj) == line
    assert fast >= len(lines) - 2


# -- reading -------------------------------------------------------------------------------
def _outcome(path: Path) -> tuple[str, Any]:
    """What load_session makes of ``path``: its error, or the session's content
    (every LazyExtra parsed: compared as plain objects)."""
    try:
        session = load_session(path)
    except RecordingError as exc:
        return "error", str(exc)
    lines = [
        {k: (dict(v) if isinstance(v, LazyExtra) else v) for k, v in line.items()}
        for line in session.lines
    ]
    return "session", (session.header, lines, session.footer, session.warnings)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=recordings(), block=st.sampled_from([1, 40, 300, rawlines.BLOCK_BYTES]))
def test_the_fast_reader_agrees_with_the_reference_reader(data: bytes, block: int) -> None:
    """Generated recordings, most with a damaged line: the same session, or the
    same one-line error naming the same line, with the fast paths and without,
    whatever the size of the blocks the file is read in."""
    with tempfile.TemporaryDirectory() as tmp, small_caps(), block_bytes(block):
        path = Path(tmp) / "rec.jsonl"
        path.write_bytes(data)
        fast = _outcome(path)
        with reference_only():
            reference = _outcome(path)
    assert fast == reference


@contextlib.contextmanager
def block_bytes(n: int) -> Iterator[None]:
    """The block reader reading ``n`` bytes at a time (lines cut anywhere)."""
    saved = rawlines.BLOCK_BYTES
    rawlines.BLOCK_BYTES = n
    try:
        yield
    finally:
        rawlines.BLOCK_BYTES = saved


HOSTILE_NUMBERS = [
    "1e999", "-1E+400", "1e-999", "18446744073709551616", "-9223372036854775809",
    "12345678901234567890.5", "0.0011950836098879379", "1e99", "1.7976931348623157e308",
    "NaN", "Infinity", "01", "1.", '"\\ud800"', '"\\u00e9"', '"\x01"', "[]", "{}",
    "1E100", "1.5e+100", "-2E+308", "1e+99", '"node1000"', '"7+e123"', '"x\\"e100"',
    "[1e100]", '{"e": 1e+100}', '{"a": 12345678901234567890}',
]  # fmt: skip


def test_hostile_numbers_in_extra_get_the_reference_verdict(tmp_path: Path) -> None:
    """Numbers the fast checks cannot read as json does go to the reference
    path: the verdict (and message) is the same with and without it."""
    header = (DATA / "tui_session.jsonl").read_bytes().splitlines()[0]
    sample = b'{"type":"sample","probe":"p","t":1,"interval":1,"values":{"a":1},"extra":{"x":%s}}'
    for number in HOSTILE_NUMBERS:
        for extra_at in (0, 70):  # alone, and inside a full batch
            rows = [header] + [sample % b"1"] * extra_at + [sample % number.encode("utf-8")]
            rows += [sample % b"2"] * 3
            path = tmp_path / "rec.jsonl"
            path.write_bytes(b"\n".join(rows) + b"\n")
            fast = _outcome(path)
            with reference_only():
                assert fast == _outcome(path), number


def test_a_demo_recording_reads_the_same_both_ways(tmp_path: Path) -> None:
    path = DATA / "demo_session.jsonl"
    fast = _outcome(path)
    with reference_only():
        assert fast == _outcome(path)
    session = load_session(path)
    extras = [line["extra"] for line in session.lines if "extra" in line]
    lazy = sum(isinstance(e, LazyExtra) for e in extras)
    assert lazy > len(extras) / 2  # the batch path took most (the footer's batch goes line by line)


def test_fast_lines_are_the_mappings_json_gives() -> None:
    """A line the block reader keeps as a msgspec object reads as the dict
    json.loads makes of it: items, order, lookups, views, equality both
    ways; its extra is one LazyExtra, made once; nothing else is a key."""
    rows = (DATA / "demo_session.jsonl").read_bytes().splitlines()[1:]
    session = load_session(DATA / "demo_session.jsonl")
    body = [json.loads(row) for row in rows if json.loads(row).get("type") != "footer"]
    assert session.lines == body and body == session.lines
    fast = [line for line in session.lines if type(line) is not dict]
    assert {line["type"] for line in fast} == {"sample", "status"}
    for line, expected in zip(session.lines, body, strict=True):
        assert isinstance(line, Mapping)
        assert list(line) == list(expected) and len(line) == len(expected)
        assert list(line.keys()) == list(expected.keys())
        assert list(line.items()) == list(expected.items())
        assert list(line.values()) == list(expected.values())
        assert {k: line[k] for k in expected} == expected
        assert all(k in line and line.get(k) == v for k, v in expected.items())
        for absent in ("numbers", "kind", "fields", "__class__", "interval" * 2, 3):
            assert absent not in line and line.get(absent, "none") == "none"
            with pytest.raises(KeyError):
                line[absent]  # type: ignore[index]
        assert not line != expected and not expected != line  # noqa: SIM202
        assert line != {**expected, "x": 1} and line != [] and line != dict(expected, t=-1)
        if "extra" in line:
            assert line["extra"] is line.get("extra") and line["extra"] == expected["extra"]
    assert fast and all(repr(line) == repr(dict(line)) for line in fast if "extra" not in line)


def test_a_sample_without_optional_fields_has_no_such_keys(tmp_path: Path) -> None:
    header = (DATA / "tui_session.jsonl").read_bytes().splitlines()[0]
    rows = [
        b'{"type":"sample","probe":"p","t":1}',
        b'{"t":2,"probe":"p","type":"sample","values":{}}',  # keys in another order
    ]
    path = tmp_path / "rec.jsonl"
    path.write_bytes(b"\n".join([header, *rows, rows[0]]) + b"\n")
    lines = load_session(path).lines
    assert [type(x) is not dict for x in lines[:2]] == [True, True]  # the block path took them
    assert lines[0] == {"type": "sample", "probe": "p", "t": 1}
    assert list(lines[0]) == ["type", "probe", "t"]
    assert "values" not in lines[0] and lines[0].get("extra") is None
    assert lines[1] == {"type": "sample", "probe": "p", "t": 2, "values": {}}
    assert dict(lines[1]) == json.loads(rows[1])


def test_strings_like_exponents_stay_on_the_fast_path() -> None:
    """ "e" and 3 digits inside a string (a host name) is no number: the
    block is still read in one decode; a digit before it is a possible one."""
    line = b'{"type":"sample","probe":"p","t":1,"extra":{"host":"node1000","m":"a+e123"}}'
    assert fastpath.decode_block([line, line]) is not None
    assert fastpath.decode_block([line.replace(b"a+e123", b"7+e123")]) is None
