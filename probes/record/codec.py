"""The recording format in one place: line types, versioning, encode and decode.

Contract (docs/recording-format.md, probes/record/schema/):
- A recording is JSON Lines: a ``header`` line, then ``probe`` / ``sample`` /
  ``status`` / ``series_end`` lines in arrival order, then a ``footer`` line.
- ``encode_record`` / ``decode_record`` are the only translation between the
  in-memory records (``Sample``, ``Status``, ``Announce``, ``SeriesEnded``)
  and line objects;
  ``dump_line`` is the only serialiser (redaction first, NaN/inf as null,
  compact separators, ASCII with ``\\uXXXX`` escapes, Python's float
  spelling, one trailing newline). ``dump_line_bytes`` is the same line as
  UTF-8 bytes, byte for byte, made by orjson when that provably gives the
  stdlib's bytes (see ``_fast_line``) and by the stdlib path otherwise.
- The reader (``reader.py``) validates every line before ``decode_record``
  sees it and refuses a header whose schema is newer than
  ``SCHEMA_VERSION``. Older versions are read as they are (version 1 is the
  only one so far); a change to the line layout bumps ``SCHEMA_VERSION`` and
  adds the upgrade of older lines here. A new line type is not such a change:
  readers skip types they do not know (with a warning), so it keeps the
  version and older probetops still read the file (``series_end`` came so).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

import orjson
from probetop.probes.core.sample import (
    Announce,
    Record,
    Sample,
    SeriesEnded,
    SeriesSummary,
    Status,
)
from probetop.probes.record.errors import RecordingError as RecordingError
from probetop.probes.record.redaction import redact, unchanged_by_redaction

FORMAT_NAME = "probetop-session"
SCHEMA_VERSION = 1


def encode_record(record: Record, t0_ns: int) -> dict[str, Any]:
    """The line object of one record; ``t`` is seconds since ``t0_ns``."""
    t = round((record.t_ns - t0_ns) / 1e9, 6)
    if isinstance(record, Sample):
        line: dict[str, Any] = {
            "type": "sample",
            "probe": record.probe,
            "t": t,
            "interval": round(record.interval_s, 6),
            "values": dict(record.values),
        }
        if record.extra:
            line["extra"] = dict(record.extra)
        return line
    if isinstance(record, Status):
        return {
            "type": "status",
            "probe": record.probe,
            "t": t,
            "level": record.level,
            "message": record.message,
        }
    if isinstance(record, Announce):
        return {"type": "probe", "t": t, **record.info}
    if isinstance(record, SeriesEnded):
        return {
            "type": "series_end",
            "probe": record.probe,
            "entity": record.entity,
            "t": t,
            "last_t": round((record.last_ns - t0_ns) / 1e9, 6),
            "reason": record.reason,
            "summaries": {name: s.as_dict() for name, s in record.summaries.items()},
        }
    raise TypeError(f"not a record: {record!r}")


def probe_info(line: Mapping[str, Any]) -> dict[str, Any]:
    """The probe description inside a ``probe`` line (without its type and time)."""
    return {k: v for k, v in line.items() if k not in ("type", "t")}


def _summary(doc: Any) -> SeriesSummary:
    """A ``series_end`` line's summary of one metric (checked by linecheck)."""

    def number(key: str) -> float | None:
        value = doc.get(key)
        return None if value is None else float(value)

    return SeriesSummary(int(doc.get("count", 0)), number("min"), number("mean"), number("max"))


def decode_record(line: Mapping[str, Any]) -> Record | None:
    """The record of a ``sample`` / ``status`` / ``probe`` / ``series_end`` line,
    ``t_ns`` relative to the session start; None for other line types."""
    t_ns = int(float(line.get("t", 0.0)) * 1e9)
    kind = line.get("type")
    if kind == "sample":
        return Sample(
            line["probe"],
            t_ns,
            float(line.get("interval", 0.0)),
            line.get("values", {}),
            line.get("extra", {}),
        )
    if kind == "status":
        return Status(line["probe"], t_ns, line["level"], line["message"])
    if kind == "probe":
        return Announce(line["id"], t_ns, probe_info(line))
    if kind == "series_end":
        return SeriesEnded(
            line["probe"],
            t_ns,
            line["entity"],
            int(float(line.get("last_t", line.get("t", 0.0))) * 1e9),
            "unseen" if line.get("reason") == "unseen" else "vanished",
            {name: _summary(doc) for name, doc in line.get("summaries", {}).items()},
        )
    return None


def finite(obj: Any) -> Any:
    """JSON has no NaN/Infinity: write them as null."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, Mapping):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def _jsonable(obj: Any) -> Any:
    """Last resort for values json cannot write (a numpy scalar...)."""
    item = getattr(obj, "item", None)
    if callable(item):
        with contextlib.suppress(Exception):
            return finite(item())
    return str(obj)


def dump_line(obj: Mapping[str, Any]) -> str:
    """One line of the file: redacted, finite, compact JSON, newline-terminated."""
    return dump_line_bytes(obj).decode("ascii")


def _stdlib_line(obj: Mapping[str, Any]) -> bytes:
    """The reference serialiser: what every line is, byte for byte."""
    text = json.dumps(
        redact(finite(obj)), separators=(",", ":"), allow_nan=False, default=_jsonable
    )
    return (text + "\n").encode("ascii")


class _NotPlain(Exception):
    """A value orjson would write differently from ``json`` (see ``_fast_line``)."""


def _not_plain(obj: Any) -> Any:
    raise _NotPlain


_FAST_OPTIONS = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
# "0" stays, other digits become "1", the characters of a float's spelling
# stay, all else is a blank: "1e-07" -> "1e-01", "0.00001" -> "0.00001".
_NUMBER_SHAPE = bytes(
    i if chr(i) in "0.e-" else ord("1") if chr(i) in "123456789" else ord(" ") for i in range(256)
)


def _fast_line(obj: Mapping[str, Any]) -> bytes | None:
    """The line by orjson when it is provably the stdlib's bytes, else None.

    orjson writes compact JSON in insertion order with NaN/inf as null, as
    the stdlib path does after ``finite``; it differs only where these
    checks send the line back to that path:
    - any type beyond dict/list/tuple/str/int/float/bool/None (a subclass,
      a dataclass, a numpy scalar: ``default`` raises);
    - non-ASCII and DEL (0x7f; the stdlib escapes both as \\uXXXX), and
      any escape sequence;
    - a float below 1e-4 (Python writes ``1e-05``, orjson ``0.00001``);
    - any string, key or value, that redaction could change
      (``unchanged_by_redaction``): then ``redact`` would change the line.
    Plain-typed lines whose strings are all unchanged by redaction are
    exactly what ``redact(finite(obj))`` leaves as it was. One type orjson
    writes without asking ``default``: a plain ``Enum`` member (neither str
    nor int), written as its value where ``json`` would write ``str(member)``;
    no record holds one (probetop's enums are ``str`` enums: subclasses)."""
    try:
        out = orjson.dumps(obj, default=_not_plain, option=_FAST_OPTIONS)
    except (_NotPlain, TypeError):  # orjson.JSONEncodeError is a TypeError
        return None
    if not out.isascii() or b"\\" in out or b"\x7f" in out:
        return None
    # Without escapes, the strings of the line are its odd '"'-separated
    # parts, and the numbers are in the even ones.
    parts = out.split(b'"')
    if b"e-" in out or b"0.0000" in out:  # a cheap filter first
        shape = b" " + b" ".join(parts[0::2]).translate(_NUMBER_SHAPE)
        if b"0e-" in shape or b"1e-" in shape or b" 0.0000" in shape or b"-0.0000" in shape:
            return None
    if not unchanged_by_redaction(parts[1::2]):
        return None
    return out


def dump_line_bytes(obj: Mapping[str, Any]) -> bytes:
    """``dump_line`` as UTF-8 bytes (the recorder's hot path)."""
    fast = _fast_line(obj)
    return fast if fast is not None else _stdlib_line(obj)
