"""The reader's block decoder: a batch of body lines checked in one typed decode.

Contract:
- ``decode_block(raws, data)`` returns the line objects of the body lines
  ``raws`` when every one is a sample or status line that certainly passes
  the reader's checks (``linecheck.check_line`` and the number rules of
  ``linecheck.weight``); otherwise None, and the reader checks those lines
  in smaller batches, then one at a time on its reference path, which names
  the bad one. It never accepts a line that path refuses.
  Its objects are the msgspec objects of the decode (``_Sample``,
  ``_Status``), read-only ``Mapping``s equal to the dicts ``json.loads``
  gives (the same keys and values; keys iterate in the writer's order),
  except that a sample's ``extra`` is a ``LazyExtra``: checked now (valid
  JSON, an object, no number ``json`` would read differently), turned into
  Python objects on first use.
  With them, an upper bound of ``linecheck.weight`` of those lines: exact for
  everything but the ``extra`` objects, which are bounded from byte counts
  (as ``linecheck.weight_bound`` does).
- Its own module because msgspec (12 ms to import with the decoder) loads
  only when a recording is first read (``reader.decode_block``), not when
  the dashboard starts.

Why: turning every number of every ``extra`` (histograms, percentile tables:
most of a recording's bytes) into Python objects is what made reading slow,
and the report never looks at them; msgspec checks them without building
them. Keeping the decoded objects instead of a dict per line is a fifth
less time and a tenth less memory per line (benchmarks/recorder_throughput.py).
"""

from __future__ import annotations

import re
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Annotated, Any, ClassVar

import msgspec
from probetop.probes.record.linecheck import MAX_NAME, MAX_T, MAX_VALUE, LazyExtra

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
_RAW = msgspec.Raw


class _Line(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
    """A body line as msgspec decoded it, read as the read-only mapping
    ``json.loads`` would give (``"type"`` from the tag; a field never
    written is no key): building a dict per line was a fifth of reading.
    ``extra`` (kept as the checked ``msgspec.Raw``) is a ``LazyExtra``,
    made on first use and kept. Not tracked by the garbage collector (16
    bytes less each): a line holds no container that could refer back to it."""

    kind: ClassVar[str]  # the line's "type"
    # Its keys, and the attribute of each: "type" is ``kind``, a sample's
    # "values" is field ``numbers`` (``values`` is the mapping's method).
    fields: ClassVar[dict[str, str]]

    # get / [] / in are called for every line by the report and the replay:
    # each is one method, no call of another.
    def get(self, key: str, default: Any = None) -> Any:
        name = self.fields.get(key)
        if name is None:
            return default
        value = getattr(self, name)
        if value is _UNSET:
            return default
        if type(value) is _RAW:
            value = self.extra = LazyExtra(value)  # type: ignore[attr-defined]
        return value

    def __getitem__(self, key: str) -> Any:
        name = self.fields.get(key)
        if name is not None:
            value = getattr(self, name)
            if value is not _UNSET:
                if type(value) is _RAW:
                    value = self.extra = LazyExtra(value)  # type: ignore[attr-defined]
                return value
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        name = self.fields.get(key)  # type: ignore[call-overload]
        return name is not None and getattr(self, name) is not _UNSET

    def __iter__(self) -> Iterator[str]:
        for key, name in self.fields.items():
            if getattr(self, name) is not _UNSET:
                yield key

    def __len__(self) -> int:
        return sum(1 for _key in self)

    # Views as a dict's (a _Line is a registered Mapping; msgspec classes
    # cannot inherit its mixin methods).
    def keys(self) -> KeysView[str]:
        return KeysView(self)  # type: ignore[arg-type]

    def items(self) -> ItemsView[str, Any]:
        return ItemsView(self)  # type: ignore[arg-type]

    def values(self) -> ValuesView[Any]:
        return ValuesView(self)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        """The line as the dict ``json.loads`` gives (``extra`` a LazyExtra)."""
        return {key: self[key] for key in self}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self.as_dict() == dict(other.items())

    def __ne__(self, other: object) -> bool:  # msgspec's own would compare as Structs
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable, as a dict

    def __repr__(self) -> str:
        return repr(self.as_dict())


class _Sample(_Line, tag="sample"):
    probe: _Name
    t: _Time
    interval: _Time | msgspec.UnsetType = _UNSET
    # Plain str keys: msgspec shares the objects of short repeated keys (a
    # constrained key type turns that off: a fifth slower, and more memory);
    # their lengths are checked in decode_block.
    numbers: dict[str, _Value] | msgspec.UnsetType = msgspec.field(default=_UNSET, name="values")
    extra: msgspec.Raw | msgspec.UnsetType = _UNSET

    kind = "sample"
    fields = {
        "type": "kind",
        "probe": "probe",
        "t": "t",
        "interval": "interval",
        "values": "numbers",
        "extra": "extra",
    }


class _Status(_Line, tag="status"):
    probe: _Name
    t: _Time
    level: str
    message: str

    kind = "status"
    fields = {"type": "kind"} | {k: k for k in ("probe", "t", "level", "message")}


for _kind in (_Sample, _Status):
    Mapping.register(_kind)

_DECODER = msgspec.json.Decoder(_Sample | _Status)

# The shape of the extras' bytes, for the checks of ``decode_block``: digits
# become "0", exponent marks "e", a decimal point stays, "{[" become "{"
# and ":," become ",", "+" is deleted (_NO_PLUS), all else is a blank
# (deleting it too would make the shape shorter, but join "bytes?n=100000"
# into an exponent). An integer of 19 digits or more (it may not fit 64
# bits: the reference path decides) shows as 19 zeros not after a "."; a
# float with a positive 3-digit exponent (it may overflow to infinity,
# which ``json`` reads and the reference path refuses by name) as "0e000".
# Deleting "+" only joins runs, so it can add hits (a string "7+e123"),
# never hide one.
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
    if chr(i) in "."
    else ord(" ")
    for i in range(256)
)
_NO_PLUS = b"+"
_ZEROS = b"0" * 19
# "e" and 3 digits, the digit before it checked on a hit (_big_exponent): the
# regex engine finds a rare first letter faster than it finds "0e" among
# so many zeros, and bytes.find ends on a "0" (its skips are short).
_EXPONENT = re.compile(rb"e000")
# An extra that does not start with "{" (each one follows a newline once joined).
_NOT_AN_OBJECT = re.compile(rb"\n[^{]")
_DOT = ord(".")
_ZERO = ord("0")


def _big_exponent(shape: bytes) -> bool:
    """Whether the shaped bytes hold "0e000": a number with a positive
    exponent of 3 digits or more. "e000" without a digit before it (a
    string "size1000") is looked at and passed over."""
    return any(m.start() and shape[m.start() - 1] == _ZERO for m in _EXPONENT.finditer(shape))


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


def decode_block(
    raws: list[bytes], data: bytes | None = None
) -> tuple[list[Mapping[str, Any]], int] | None:
    """(line objects, an upper bound of their summed ``linecheck.weight``) of the
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
        lines: list[Any] = list(map(decode, raws))  # _Sample | _Status
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    extras: list[msgspec.Raw] = []
    keep = extras.append
    values_seen: list[dict[str, Any]] = []
    tables = values_seen.append
    unset = _UNSET
    # The weight of each line but its extra, exactly as linecheck.weight counts:
    # 3 for the object, 1 per key, 1 per value that is not a container.
    weight = 0
    for item in lines:
        if type(item) is _Status:
            weight += 13  # 5 keys, 5 strings and numbers
            continue
        weight += 9  # type, probe, t
        if item.interval is not unset:
            weight += 2
        values = item.numbers
        if values is not unset:
            weight += 4 + 2 * len(values)  # 3 + 1 for the key, 2 per item
            tables(values)
        extra = item.extra
        if extra is not unset:
            keep(extra)
            weight += 1
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
        shape = joined.translate(_SHAPE, _NO_PLUS)
        if _big_exponent(shape) or _long_integer(shape):
            return None
        # linecheck.weight_bound of each extra ("{[" became "{", ":," became ","), summed.
        weight += 3 * shape.count(b"{") + shape.count(b",") + len(extras)
    return lines, weight
