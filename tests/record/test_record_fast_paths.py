"""The recorder's and reader's fast paths give exactly what the stdlib paths give.

The fast paths (orjson) are only taken when they provably agree with the
reference code (``json`` with redaction; the reader's full checks); these
tests feed both the same generated and real input and compare bytes and
objects, so a rule the fast path misses fails here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from probetop.probes.record.codec import _fast_line, _stdlib_line, dump_line_bytes

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
