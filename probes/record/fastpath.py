"""The reader's fast path: a batch of body lines checked in one typed decode.

Contract:
- ``decode_batch(raws)`` returns the line objects of ``raws`` (each a body
  line without its newline) when every one is a sample or status line that
  certainly passes the reader's checks (``reader._check_line`` and the
  number rules of ``reader._weight``); otherwise None, and the reader checks
  those lines one at a time on its reference path, which names the bad one.
  It never accepts a line that path refuses, and its objects equal what
  ``json.loads`` gives, except that a sample's ``extra`` is a ``LazyExtra``:
  checked now (valid JSON, an object, no number ``json`` would read
  differently), turned into Python objects on first use.
- ``weight_bound(data)``: an upper bound of ``reader._weight`` for the lines
  in ``data``, from byte counts.

Why: turning every number of every ``extra`` (histograms, percentile tables:
most of a recording's bytes) into Python objects is what made reading slow,
and the report never looks at them; msgspec checks them without building
them (benchmarks/recorder_throughput.py).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from probetop.probes.record.lazyextra import LazyExtra
from probetop.probes.record.limits import MAX_NAME, MAX_T, MAX_VALUE

_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME)]
# Integers of up to 18 digits only (the byte guard below sends longer ones to
# the reference path, which knows about 64 bits).
_Int = Annotated[int, msgspec.Meta(ge=-(10**18), le=10**18)]
_Value = _Int | Annotated[float, msgspec.Meta(ge=-MAX_VALUE, le=MAX_VALUE)] | None
_Time = (
    Annotated[int, msgspec.Meta(ge=0, le=int(MAX_T))]
    | Annotated[float, msgspec.Meta(ge=0, le=MAX_T)]
)
_UNSET = msgspec.UNSET


class _Sample(msgspec.Struct, tag_field="type", tag="sample", forbid_unknown_fields=True):
    probe: _Name
    t: _Time
    interval: _Time | msgspec.UnsetType = _UNSET
    values: dict[_Name, _Value] | msgspec.UnsetType = _UNSET
    extra: msgspec.Raw | msgspec.UnsetType = _UNSET


class _Status(msgspec.Struct, tag_field="type", tag="status", forbid_unknown_fields=True):
    probe: _Name
    t: _Time
    level: str
    message: str


_DECODER = msgspec.json.Decoder(list[_Sample | _Status])

# The shape of a batch's bytes, for the checks of ``decode_batch``: digits
# become "0", exponent marks "e"/"+", a decimal point stays, "{[" become "{"
# and ":," become ",", all else is a blank. An integer of 19 digits or more
# (it may not fit 64 bits: the reference path decides) shows as 19 zeros;
# a float with a positive 3-digit exponent (it may overflow to infinity,
# which ``json`` reads and the reference path refuses by name) as "e000" or
# "e+000".
_SHAPE = bytes(
    ord("0")
    if chr(i) in "0123456789"
    else ord("e")
    if chr(i) in "eE"
    else ord("{")
    if chr(i) in "{["
    else ord(",")
    if chr(i) in ":,"
    else i
    if chr(i) in "+."
    else ord(" ")
    for i in range(256)
)
_ZEROS = b"0" * 19
# A digit, then e or e+ and 3 digits: a literal prefix the regex engine finds
# faster than bytes.find finds "e0" among so many zeros.
_BIG_EXPONENT = re.compile(rb"0e\+?000")
_DOT = ord(".")
_ZERO = ord("0")


def _long_integer(shape: bytes) -> bool:
    """Whether the shaped bytes hold a run of 19 digits or more that is not
    a fraction (after a decimal point). Searching for the 19 zeros alone
    skips ahead on every blank; a hit (a long fraction such as
    0.0011950836098879379) is rare and looked at closely."""
    at = shape.find(_ZEROS)
    while at >= 0:
        start = at
        while start > 0 and shape[start - 1] == _ZERO:
            start -= 1
        if start == 0 or shape[start - 1] != _DOT:
            return True
        end = at + len(_ZEROS)
        while end < len(shape) and shape[end] == _ZERO:
            end += 1
        at = shape.find(_ZEROS, end)
    return False


def weight_bound(data: bytes) -> int:
    """At least ``reader._weight`` of the JSON value ``data`` (equal for one
    without empty containers or ``{[:,`` inside strings), from byte counts.

    Each container weighs 3, each key 1 (one ':' each); every value but the
    root is an element of a container, which holds one more element than it
    has ',' when it is not empty: weight = 2C + K + commas + nonempty + 1
    <= 3C + K + commas + 1. Counting ``{[:,`` inside strings as well only
    raises the bound. For ``b"[" + b",".join(lines) + b"]"`` it is the sum
    of the lines' bounds plus 3."""
    return 3 * (data.count(b"{") + data.count(b"[")) + data.count(b":") + data.count(b",") + 1


def decode_batch(raws: list[bytes]) -> tuple[list[dict[str, Any]], int] | None:
    """(line objects, their summed ``weight_bound``) of ``raws``, or None when
    one of them may not pass the reference checks (see the module docstring)."""
    data = b"[" + b",".join(raws) + b"]"
    if not data.isascii():  # the writer escapes non-ASCII; UTF-8 is checked there
        return None
    shape = data.translate(_SHAPE)
    if _BIG_EXPONENT.search(shape) or _long_integer(shape):
        return None
    try:
        decoded = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if len(decoded) != len(raws):  # a line that was not one value ("1,2")
        return None
    lines: list[dict[str, Any]] = []
    append = lines.append
    unset = _UNSET
    item: Any  # _Sample | _Status, told apart by type() (isinstance is slower)
    for item in decoded:
        if type(item) is _Status:
            append(
                {
                    "type": "status",
                    "probe": item.probe,
                    "t": item.t,
                    "level": item.level,
                    "message": item.message,
                }
            )
            continue
        interval, values, extra = item.interval, item.values, item.extra
        if extra is not unset:
            raw = bytes(extra)
            if raw[:1] != b"{":
                return None  # not an object: the reference path says so
            extra = LazyExtra(raw)
        if interval is not unset and values is not unset and extra is not unset:
            append(
                {
                    "type": "sample",
                    "probe": item.probe,
                    "t": item.t,
                    "interval": interval,
                    "values": values,
                    "extra": extra,
                }
            )
            continue
        line: dict[str, Any] = {"type": "sample", "probe": item.probe, "t": item.t}
        if interval is not unset:
            line["interval"] = interval
        if values is not unset:
            line["values"] = values
        if extra is not unset:
            line["extra"] = extra
        append(line)
    # weight_bound(data) from the shape: 3 per "{[", 1 per ":,", less the
    # batch's own brackets and commas (see weight_bound).
    return lines, 3 * shape.count(b"{") + shape.count(b",") + 1 - 3
