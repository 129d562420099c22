"""The reader's fast path: a batch of body lines checked in one typed decode.

Contract:
- ``decode_block(data, count)`` returns the line objects of the ``count``
  body lines in ``data`` (joined by newlines) when every one is a sample or
  status line that
  certainly passes the reader's checks (``linecheck._check_line`` and the
  number rules of ``linecheck._weight``); otherwise None, and the reader checks
  those lines one at a time on its reference path, which names the bad one.
  It never accepts a line that path refuses, and its objects equal what
  ``json.loads`` gives, except that a sample's ``extra`` is a ``LazyExtra``:
  checked now (valid JSON, an object, no number ``json`` would read
  differently), turned into Python objects on first use.
  With them, an upper bound of ``linecheck._weight`` of those lines: exact for
  everything but the ``extra`` objects, which are bounded from byte counts
  (``weight_bound``).

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
    # Plain str keys: msgspec shares the objects of short repeated keys (a
    # constrained key type turns that off: a fifth slower, and more memory);
    # their lengths are checked in decode_block.
    values: dict[str, _Value] | msgspec.UnsetType = _UNSET
    extra: msgspec.Raw | msgspec.UnsetType = _UNSET


class _Status(msgspec.Struct, tag_field="type", tag="status", forbid_unknown_fields=True):
    probe: _Name
    t: _Time
    level: str
    message: str


_DECODER = msgspec.json.Decoder(_Sample | _Status)

# The shape of the extras' bytes, for the checks of ``decode_block``: digits
# become "0", exponent marks "e"/"+", a decimal point stays, "{[" become "{"
# and ":," become ",", all else is a blank (deleting it instead would make
# the shape shorter, but join "bytes?n=100000" into an exponent). An integer
# of 19 digits or more (it may not fit 64 bits: the reference path decides)
# shows as 19 zeros not after a "."; a float with a positive 3-digit
# exponent (it may overflow to infinity, which ``json`` reads and the
# reference path refuses by name) as "0e000" or "0e+000".
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
# An extra that does not start with "{" (each one follows a newline once joined).
_NOT_AN_OBJECT = re.compile(rb"\n[^{]")
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
    """At least ``linecheck._weight`` of the JSON value ``data`` (equal for one
    without empty containers or ``{[:,`` inside strings), from byte counts.

    Each container weighs 3, each key 1 (one ':' each); every value but the
    root is an element of a container, which holds one more element than it
    has ',' when it is not empty: weight = 2C + K + commas + nonempty + 1
    <= 3C + K + commas + 1. Counting ``{[:,`` inside strings as well only
    raises the bound. For ``b"[" + b",".join(lines) + b"]"`` it is the sum
    of the lines' bounds plus 3."""
    return 3 * (data.count(b"{") + data.count(b"[")) + data.count(b":") + data.count(b",") + 1


def decode_block(
    raws: list[bytes], data: bytes | None = None
) -> tuple[list[dict[str, Any]], int] | None:
    """(line objects, an upper bound of their summed ``linecheck._weight``) of the
    body lines ``raws`` (each without its newline), or None when one of them
    may not pass the reference checks (see the module docstring). ``data``:
    the same lines joined by newlines, when the caller has it (it is looked
    at whole, once, instead of line by line).

    One typed decode per line (each line must be exactly one JSON value, so
    they are not joined into one array: a line cut in two could be read as
    part of its neighbour); the byte screens then look only at the ``extra``
    objects, the one part the decode does not check number by number (``t``,
    ``interval`` and ``values`` are checked by their types)."""
    if not (data.isascii() if data is not None else all(raw.isascii() for raw in raws)):
        return None  # the writer escapes non-ASCII; UTF-8 is checked there
    decode = _DECODER.decode
    try:
        decoded = [decode(raw) for raw in raws]
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    lines: list[dict[str, Any]] = []
    append = lines.append
    extras: list[msgspec.Raw] = []
    keep = extras.append
    values_seen: list[dict[str, Any]] = []
    tables = values_seen.append
    unset = _UNSET
    # The weight of each line but its extra, exactly as linecheck._weight counts:
    # 3 for the object, 1 per key, 1 per value that is not a container.
    weight = 0
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
            weight += 13  # 5 keys, 5 strings and numbers
            continue
        interval, values, extra = item.interval, item.values, item.extra
        if interval is not unset and values is not unset and extra is not unset:
            keep(extra)
            append(
                {
                    "type": "sample",
                    "probe": item.probe,
                    "t": item.t,
                    "interval": interval,
                    "values": values,
                    "extra": LazyExtra(extra),
                }
            )
            weight += 16 + 2 * len(values)  # 6 keys, 4 scalars; values 3 + 2 per item
            tables(values)
            continue
        line: dict[str, Any] = {"type": "sample", "probe": item.probe, "t": item.t}
        weight += 9
        if interval is not unset:
            line["interval"] = interval
            weight += 2
        if values is not unset:
            line["values"] = values
            weight += 4 + 2 * len(values)
            tables(values)
        if extra is not unset:
            keep(extra)
            line["extra"] = LazyExtra(extra)
            weight += 1
        append(line)
    # The keys of every values object: the same few names over and over, so
    # their set is small and checked at once.
    names = set().union(*values_seen)
    if names and ("" in names or max(map(len, names)) > MAX_NAME):
        return None
    if extras:
        # Raw JSON holds no newline once the lines are split: joined by one,
        # each extra starts after one, and no number runs into the next.
        joined = b"\n".join(extras)
        if joined[:1] != b"{" or _NOT_AN_OBJECT.search(joined):
            return None  # an extra that is not an object: the reference path says so
        shape = joined.translate(_SHAPE)
        if _BIG_EXPONENT.search(shape) or _long_integer(shape):
            return None
        # weight_bound of each extra ("{[" became "{", ":," became ","), summed.
        weight += 3 * shape.count(b"{") + shape.count(b",") + len(extras)
    return lines, weight
