"""What a valid recording line is: the checks, the limits, the per-line fast path.

Contract:
- ``check_header`` / ``check_line`` check the types of every field the
  reader, the report and the panes use, and raise ``LineError`` naming what
  is wrong (the reader adds the file and line number); ``NotJson`` when the
  line is not UTF-8 JSON at all (as the last line: a torn write).
- ``weight`` counts what a parsed line costs in memory (``MAX_WEIGHT``), and
  refuses a number no report can carry; ``weight_bound(raw)`` is an upper
  bound of it from byte counts alone.
- ``parse(raw, keys)`` is the reference parser (``json``; ``KeyTable``
  shares one str per distinct key across a file). ``decode_body(raw)`` reads
  one body line: orjson and a sample check written for speed where they can
  vouch for it, else ``parse`` and ``check_line`` (the reference path), so a
  bad line gets the reference path's message. Both accept the same lines
  with the same content (tests/record/test_record_fast_paths.py).
- ``LazyExtra``: a sample's ``extra`` that the checks passed, kept as bytes
  and parsed on first use (the block decoder, ``fastpath``, makes them).
- The content limits (``MAX_WEIGHT``, ``MAX_NAME``, ``MAX_PROBES``,
  ``MAX_T``, ``MAX_VALUE``) are here; the byte limits are ``rawlines``'
  (docs/recording-format.md, "Reading recordings back").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from probetop.probes.record.codec import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    RecordingError,
)

if TYPE_CHECKING:
    import msgspec

MAX_WEIGHT = 20_000_000
"""What the kept lines may weigh in all, counting each JSON number, string
and object key 1 and each object or array 3 (about 40 bytes of memory per
unit): this, not the byte size, bounds the memory of a hostile file
(``{}`` is 2 bytes on disk and 64 in memory)."""
MAX_NAME = 256
"""Longest probe id, kind, metric name or value key."""
MAX_PROBES = 1024
"""Most distinct probes in one recording (each is a pane in a replay)."""
MAX_T = 1e10
"""Largest time stamp, in seconds since the session start (317 years)."""
MAX_VALUE = 1e100
"""Largest metric value magnitude: far above any real metric, small enough
that the report's sums and squares of them stay finite."""

_MAX_INT = 1 << 64


class LineError(Exception):
    """What is wrong with one line (the reader adds the file and line number)."""


class NotJson(LineError):
    """The line is not UTF-8 JSON: as the last line, a torn write."""


# -- validation ------------------------------------------------------------


def _is_number(value: Any) -> bool:
    """A finite JSON number (not a bool; a huge integer is not finite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _name(line: dict[str, Any], key: str, *, required: bool = True) -> None:
    value = line.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or not value:
        raise LineError(f"{key!r} is not a non-empty string")
    if len(value) > MAX_NAME:
        raise LineError(f"{key!r} is longer than {MAX_NAME} characters")


def _text(obj: dict[str, Any], key: str, *, nullable: bool = True) -> None:
    if key in obj and not (isinstance(obj[key], str) or (nullable and obj[key] is None)):
        raise LineError(f"{key!r} is not a string")


def _mapping(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key, {})
    if not isinstance(value, dict):
        raise LineError(f"{key!r} is not an object")
    return value


def _objects(obj: dict[str, Any], key: str, limit: int | None = None) -> list[dict[str, Any]]:
    """``obj[key]`` (default []) as an array of objects, at most ``limit`` long
    (counted before the items are looked at)."""
    items = obj.get(key, [])
    if not isinstance(items, list):
        raise LineError(f"{key!r} is not an array")
    if limit is not None and len(items) > limit:
        raise LineError(f"more than {limit} {key}")
    for item in items:
        if not isinstance(item, dict):
            raise LineError(f"an item of {key!r} is not an object")
    return items


def _time(obj: dict[str, Any], key: str, *, required: bool = True) -> None:
    if key not in obj and not required:
        return
    value: Any = obj.get(key)
    if not _is_number(value):
        raise LineError(f"{key!r} is not a finite number")
    if not 0 <= float(value) <= MAX_T:
        raise LineError(f"{key!r} is out of range (0..{MAX_T:g} seconds)")


def _values(line: dict[str, Any]) -> None:
    values = _mapping(line, "values")
    for key, value in values.items():
        if not key or len(key) > MAX_NAME:
            raise LineError(f"a key of 'values' is empty or longer than {MAX_NAME} characters")
        if value is not None and not _is_number(value):
            raise LineError(f"values[{key[:40]!r}] is not a finite number or null")
        if value is not None and abs(value) > MAX_VALUE:
            raise LineError(f"values[{key[:40]!r}] is out of range (beyond ±{MAX_VALUE:g})")


def _probe_description(info: dict[str, Any]) -> None:
    """A probe description (header ``probes`` item or ``probe`` line)."""
    _name(info, "id")
    _name(info, "kind")
    _mapping(info, "params")
    _text(info, "reference_command")
    for metric in _objects(info, "metrics"):
        _name(metric, "name")
        _text(metric, "unit", nullable=False)
        _text(metric, "description", nullable=False)
        if "primary" in metric and not isinstance(metric["primary"], bool):
            raise LineError("a metric's 'primary' is not true or false")


def _assertions(footer: dict[str, Any]) -> None:
    """The footer's optional ``assertions`` (the --assert outcomes; older
    footers have none, and still load)."""
    for item in _objects(footer, "assertions"):
        _text(item, "expr", nullable=False)
        _text(item, "metric", nullable=False)
        if "passed" in item and not isinstance(item["passed"], bool):
            raise LineError("an assertion's 'passed' is not true or false")
        if item.get("measured") is not None and not _is_number(item["measured"]):
            raise LineError("an assertion's 'measured' is not a finite number or null")


def _series_end(line: dict[str, Any]) -> None:
    """A ``series_end`` line: whose series, when, and its summary per metric."""
    _name(line, "probe")
    _name(line, "entity")
    _time(line, "t")
    _time(line, "last_t", required=False)
    _text(line, "reason", nullable=False)
    for name, summary in _mapping(line, "summaries").items():
        if not name or len(name) > MAX_NAME:
            raise LineError(f"a key of 'summaries' is empty or longer than {MAX_NAME} characters")
        if not isinstance(summary, dict):
            raise LineError(f"summaries[{name[:40]!r}] is not an object")
        count = summary.get("count", 0)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < _MAX_INT:
            raise LineError(f"summaries[{name[:40]!r}]'s 'count' is not a whole number")
        for key in ("min", "mean", "max"):
            value = summary.get(key)
            if value is not None and not (_is_number(value) and abs(value) <= MAX_VALUE):
                raise LineError(
                    f"summaries[{name[:40]!r}]'s {key!r} is not a finite number or null"
                )


def check_header(header: Any) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise LineError(f"not a probetop recording (no {FORMAT_NAME} header)")
    schema = header.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        raise LineError(f"'schema' is {json.dumps(schema)[:40]}, not a schema number (1, 2...)")
    if schema > SCHEMA_VERSION:
        raise RecordingError(
            f"recording schema {schema} is newer than this probetop reads "
            f"({SCHEMA_VERSION}); upgrade probetop"
        )
    _text(header, "started_at")
    _text(header, "probetop")
    command = header.get("command", [])
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise LineError("'command' is not an array of strings")
    _mapping(header, "host")
    for info in _objects(header, "probes", limit=MAX_PROBES):
        _probe_description(info)
    return header


def check_line(line: Any) -> str:
    """Validate one body line; its type (or "" for a type this reader skips)."""
    if not isinstance(line, dict):
        raise LineError(f"is a JSON {type(line).__name__}, not an object")
    kind = line.get("type")
    if not isinstance(kind, str):
        raise LineError("has no 'type'")
    if kind == "sample":
        _name(line, "probe")
        _time(line, "t")
        _time(line, "interval", required=False)
        _values(line)
        _mapping(line, "extra")
    elif kind == "status":
        _name(line, "probe")
        _time(line, "t")
        for key in ("level", "message"):
            if not isinstance(line.get(key), str):
                raise LineError(f"{key!r} is not a string")
    elif kind == "probe":
        _time(line, "t")
        _probe_description(line)
    elif kind == "series_end":
        _series_end(line)
    elif kind == "footer":
        if line.get("duration_s") is not None:
            _time(line, "duration_s")
        _text(line, "reason")
        _text(line, "ended_at")
        for pid, summary in _mapping(line, "summaries").items():
            if summary is not None and not isinstance(summary, dict):
                raise LineError(f"summaries[{pid[:40]!r}] is not an object")
        for pid, error in _mapping(line, "errors").items():
            if error is not None and not isinstance(error, str):
                raise LineError(f"errors[{pid[:40]!r}] is not a string")
        _assertions(line)
    elif kind == "header":
        raise LineError("is a second header (two recordings joined into one file?)")
    else:
        return ""
    return kind


def weight(obj: Any, budget: int) -> int:
    """The weight of ``obj`` (see MAX_WEIGHT); stops counting past ``budget``.

    LineError for a number too big anywhere in it: ``1e999`` reads as
    infinity, which no report, chart or JSON output can carry, and an
    integer beyond 64 bits fails wherever it is turned into a float."""
    count = 0
    stack = [obj]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is LazyExtra:  # a checked extra (the block decoder's): weigh its objects
            item = item.data
            kind = dict
        elif kind not in _JSON_TYPES and isinstance(item, Mapping):
            # a line the block decoder kept as a read-only mapping (``fastpath``)
            item = dict(item.items())
            kind = dict
        if kind is dict:
            count += 3 + len(item)  # the object and its keys
            stack.extend(item.values())
        elif kind is list:
            count += 3
            stack.extend(item)
        else:
            count += 1
            if kind is float and item - item != 0.0:  # inf (NaN cannot be read)
                raise LineError("holds a number too large for a float")
            if kind is int and not -_MAX_INT <= item <= _MAX_INT:
                raise LineError("holds an integer too large (beyond 64 bits)")
        if count > budget:
            break
    return count


# What json.loads makes: weighed as they are.
_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class KeyTable:
    """One str object per distinct object key across the whole file (json
    shares them only within one line): a third less memory for a recording."""

    LIMIT = 1 << 16  # a real recording has a few thousand distinct keys

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        known = self.known
        if len(known) >= self.LIMIT:  # a hostile file: do not grow the table too
            get = known.get
            return {get(key, key): value for key, value in pairs}
        add = known.setdefault
        return {add(key, key): value for key, value in pairs}


def parse(raw: bytes, keys: KeyTable | None = None) -> Any:
    """A line's JSON value. LineError if it is not UTF-8 JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotJson("is not UTF-8 text") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=keys)
    except RecursionError:
        raise NotJson("is not valid JSON (nested too deeply)") from None
    except ValueError:  # JSONDecodeError, NaN/Infinity, an integer too long to read
        raise NotJson("is not valid JSON") from None


# -- the fast path ------------------------------------------------------------
#
# ``decode_body`` first tries orjson and a check of sample lines written
# for speed (``_fast_sample``); whatever that path cannot prove valid goes
# through the reference path above (``json``, ``check_line``, ``weight``),
# which accepts the same lines and names what is wrong with the others. So a
# good line costs the fast path only, and a bad one gets the same message as
# before. tests/record/test_record_fast_paths.py checks they agree.

_NONE = type(None)
_NUMBER_TYPES = frozenset({int, float, _NONE})
# Digits become "0", everything but a decimal point a blank: an integer of
# 19 digits or more (one that may not fit 64 bits, which orjson would read
# as a float where ``json`` keeps it an int) shows as " 000...".
_INT_SHAPE = bytes(
    ord("0") if chr(i) in "0123456789" else ord(".") if chr(i) == "." else ord(" ")
    for i in range(256)
)
_LONG_INT = b" " + b"0" * 19


def weight_bound(raw: bytes) -> int:
    """At least ``weight`` of the line ``raw`` is (equal for a line without
    empty containers or ``{[:,`` inside strings), from byte counts alone.

    Each container weighs 3; each key 1 (one ':' each); every value but the
    root is a container's element, and a container holds one more element
    than it has ',' when it is not empty: weight = 2C + K + commas + nonempty
    + 1 <= 3C + K + commas + 1, where counting ``{[:,`` inside strings too
    only raises the bound."""
    return 3 * (raw.count(b"{") + raw.count(b"[")) + raw.count(b":") + raw.count(b",") + 1


def _fast_sample(line: dict[str, Any]) -> bool:
    """True when the sample line passes ``check_line``'s sample checks; False
    when it may not (then the reference path decides). Same rules, done with
    whole-container operations instead of a Python loop per value."""
    probe = line.get("probe")
    if type(probe) is not str or not 0 < len(probe) <= MAX_NAME:
        return False
    t = line.get("t")
    if (type(t) is not float and type(t) is not int) or not 0 <= t <= MAX_T:
        return False
    if "interval" in line:
        t = line["interval"]
        if (type(t) is not float and type(t) is not int) or not 0 <= t <= MAX_T:
            return False
    values = line.get("values", {})
    if type(values) is not dict or type(line.get("extra", {})) is not dict:
        return False
    if values:
        if "" in values or max(map(len, values)) > MAX_NAME:
            return False
        numbers: Any = values.values()
        kinds = set(map(type, numbers))
        if not kinds <= _NUMBER_TYPES:
            return False
        if _NONE in kinds:
            numbers = [v for v in numbers if v is not None]
        if numbers and (max(numbers) > MAX_VALUE or min(numbers) < -MAX_VALUE):
            return False
    return True


def _fast_line(raw: bytes) -> tuple[dict[str, Any], str] | None:
    """(line, kind) of a body line that is certainly valid, or None."""
    if _LONG_INT in raw.translate(_INT_SHAPE):
        return None
    try:
        # orjson refuses invalid UTF-8, NaN/Infinity and 1e999 (json reads
        # the last as infinity: the reference path names it).
        line = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(line) is not dict:
        return None
    kind = line.get("type")
    if kind == "sample":
        return (line, kind) if _fast_sample(line) else None
    try:
        return line, check_line(line)
    except LineError:
        return None


def decode_body(raw: bytes, keys: KeyTable | None = None) -> tuple[dict[str, Any], str, bool]:
    """(line, kind, exact) of one body line; ``exact`` False when the fast
    path read it (its weight is then ``weight_bound``). LineError if bad."""
    fast = _fast_line(raw)
    if fast is not None:
        return fast[0], fast[1], False
    line = parse(raw, keys)
    return line, check_line(line), True


# -- a checked extra, parsed on first use -----------------------------------------


class LazyExtra(Mapping[str, Any]):
    """A sample's ``extra`` object, already checked, parsed on first use.

    ``LazyExtra(raw)`` holds the bytes of a JSON object that the reader's
    checks passed: ``bytes``, or the ``msgspec.Raw`` the block decode gave,
    which keeps the bytes of its line in memory until the extra is parsed (at
    most the recording's size in all). A read-only mapping (the type
    ``Sample.extra`` has); ``dict(extra)`` or any lookup parses the bytes
    (orjson; ``json`` if orjson ever refused them; the checks guarantee it
    parses to what ``json`` would give) and drops them. Equal to any mapping
    with the same items."""

    __slots__ = ("_data", "_raw")

    def __init__(self, raw: bytes | msgspec.Raw) -> None:
        self._raw: bytes | msgspec.Raw | None = raw
        self._data: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The parsed object (parsed now if it was not yet)."""
        if self._data is None:
            assert self._raw is not None
            raw = memoryview(self._raw)  # what orjson takes of a msgspec.Raw
            try:
                self._data = orjson.loads(raw)
            except orjson.JSONDecodeError:  # not expected: json reads all the checks pass
                self._data = json.loads(raw.tobytes())
            self._raw = None  # the objects replace the bytes
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyExtra):
            other = other.data
        return self.data == other

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable, as a dict

    def __repr__(self) -> str:
        return f"LazyExtra({self.data!r})"
