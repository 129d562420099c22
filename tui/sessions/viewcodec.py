"""The remote view's compact link: a recording's lines as a view needs them,
schema-coded, delta-coded and zstandard-compressed (``follow --compact``).

Contract:
- ``ViewEncoder.encode(lines)`` turns whole recording lines (JSON, no
  newline) into the bytes of one batch of the compressed stream; ``keepalive()``
  an empty line. One zstandard frame per connection, flushed at the end of
  each batch (``FLUSH_BLOCK``), so the view decodes every batch as it comes
  and the compressor keeps the whole connection as its history.
- ``ViewDecoder.feed(data)`` takes the stream's bytes as they arrive and
  returns the recording lines it completes, as JSON bytes that
  ``decode_line`` reads as it reads a recording's, and how many empty
  (keepalive) lines came. One recording line in, one out, in order: the
  view's line count (where a resume starts) is the recording's.
- Sample lines travel as ``S`` lines: the probe's value keys once (a ``K``
  line, again when they change), then per sample the time and interval in
  ms as differences, the values in that key order with the digits a pane
  prints (``VALUE_DIGITS`` significant ones, every whole digit below 10000
  and of units never given a k/M prefix) and an empty field for one that
  prints as at the probe's last sample, and the ``extra`` keys that
  changed. ``VIEW_OMITS`` (latency histograms and sums, read by the
  Prometheus exporters, never by a pane) stay on the host. Every other line
  (header, status, footer) travels as it is (``J``).
- Lossy only in what no pane shows: digits beyond those a pane prints
  (``encode(lines, live=False)``, the history: every digit),
  time below 1 ms, ``VIEW_OMITS``. The recording on the host is untouched;
  ``probetop follow`` without ``--compact`` sends it byte for byte.
"""

from __future__ import annotations

import json
import math
from typing import Any

import zstandard

VALUE_DIGITS = 3  # fmt_value prints 3 significant digits, and whole numbers below 10000
# Units fmt_value never gives a k/M prefix: a big value shows all its whole digits.
_WHOLE_UNITS = ("_ms", "_pct", "_mhz", "load1", "load5", "load15")
VIEW_OMITS = frozenset({"lat_hist", "clat_hist", "lat_sum_ms"})
ZSTD_LEVEL = 19  # ~1 ms per batch of a few KB: the compressor's time is not the budget
SAMPLE_KEYS = frozenset({"type", "probe", "t", "interval", "values", "extra"})
_SEP = ","
_DUMP = {"separators": (",", ":"), "ensure_ascii": False, "allow_nan": False}


def _token(value: Any, whole: bool = False, exact: bool = False) -> str | None:
    """One value's text, or None when the fast form cannot carry it.
    ``whole``: the pane shows every whole digit of it at any size;
    ``exact``: every digit (repr reads back as the same float)."""
    if value is None:
        return "n"
    if value is True:
        return "T"
    if value is False:
        return "F"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value) if exact else _short_float(value, whole)
    return None


def _short_float(value: float, whole: bool = False) -> str:
    """``value`` at the significant digits a pane prints (VALUE_DIGITS, and
    the whole digits below 10000 or of a ``whole`` value) in the fewest
    characters that read back as a float: ``2573.``, ``1.05e4``, ``105e2``."""
    magnitude = len(str(int(abs(value))))  # whole digits
    digits = VALUE_DIGITS if magnitude < 4 or (magnitude > 4 and not whole) else magnitude
    text = format(value, f".{digits}g")
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
        if "." in mantissa:  # 1.054e8 as 1054e5
            head, frac = mantissa.split(".")
            alt = f"{head}{frac}e{int(exponent) - len(frac)}"
            text = min(text, alt, key=len)
    return text if any(c in text for c in ".en") else text + "."  # stays a float


def _value(token: str) -> Any:
    if token == "n":
        return None
    if token in ("T", "F"):
        return token == "T"
    if any(c in token for c in ".en"):
        return float(token)
    return int(token)


class _ProbeState:
    __slots__ = ("extra", "keys", "t_ms", "tokens")

    def __init__(self, keys: tuple[str, ...], before: _ProbeState | None = None) -> None:
        """``before``: the probe's state under its previous keys (a device
        came or went): the values of the keys kept carry over, so they
        travel only when they change, and so do the time and extra."""
        self.keys = keys
        old = dict(zip(before.keys, before.tokens, strict=True)) if before else {}
        self.tokens: list[str] = [old.get(k, "") for k in keys]
        self.t_ms: int = before.t_ms if before else 0
        self.extra: dict[str, Any] = before.extra if before else {}


class ViewEncoder:
    """The host's side (``probetop follow --compact``)."""

    def __init__(self) -> None:
        self._probes: dict[str, _ProbeState] = {}
        self._live = True
        self._z = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()

    def encode(self, lines: list[bytes], *, live: bool = True) -> bytes:
        """``live`` False (the history a view rebuilds its panes from): the
        values at full precision, so its statistics are the recording's."""
        self._live = live
        text = "".join(self._line(raw) for raw in lines)
        return self._flush(text.encode())

    def keepalive(self) -> bytes:
        return self._flush(b"\n")

    def _flush(self, data: bytes) -> bytes:
        return self._z.compress(data) + self._z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def _line(self, raw: bytes) -> str:
        text = raw.decode("utf-8", "replace")
        if not raw.startswith(b'{"type":"sample"'):
            return f"J{text}\n"
        try:
            line = json.loads(raw)
        except ValueError:
            return f"J{text}\n"
        coded = self._sample(line)
        return coded if coded is not None else f"J{text}\n"

    def _sample(self, line: dict[str, Any]) -> str | None:
        values, extra = line.get("values"), line.get("extra", {})
        probe = line.get("probe")
        if (
            not set(line) <= SAMPLE_KEYS
            or not isinstance(values, dict)
            or not isinstance(extra, dict)
            or not isinstance(probe, str)
            or any(c in probe for c in "|\n")
        ):
            return None
        tokens = [_token(v, _whole(k), exact=not self._live) for k, v in values.items()]
        if any(t is None or _SEP in t for t in tokens):
            return None
        t_ms = round(float(line.get("t", 0.0)) * 1000)
        interval_ms = round(float(line.get("interval", 0.0)) * 1000)
        out = ""
        keys = tuple(values)
        state = self._probes.get(probe)
        if state is None or state.keys != keys:
            state = self._probes[probe] = _ProbeState(keys, state)
            out += "K" + json.dumps([probe, keys], **_DUMP) + "\n"  # type: ignore[arg-type]
        fields = []
        for i, token in enumerate(tokens):
            assert token is not None
            fields.append("" if state.tokens[i] == token else token)
            state.tokens[i] = token
        kept = {k: v for k, v in extra.items() if k not in VIEW_OMITS}
        if set(kept) >= set(state.extra):  # only keys added or changed: send those
            changed = {k: v for k, v in kept.items() if state.extra.get(k, _MISSING) != v}
            extra_text = "+" + json.dumps(changed, **_DUMP) if changed else ""  # type: ignore[arg-type]
        else:  # a key went away: send them all
            extra_text = "=" + json.dumps(kept, **_DUMP)  # type: ignore[arg-type]
        state.extra = kept
        dt = t_ms - state.t_ms
        state.t_ms = t_ms
        # interval is about the time since the probe's last sample: send the difference
        out += f"S{probe}|{dt}|{interval_ms - dt}|{_SEP.join(fields)}|{extra_text}\n"
        return out


_MISSING = object()


def _whole(key: str) -> bool:
    """Whether the pane prints every whole digit of ``key``'s values (no k/M)."""
    return key.split("@", 1)[0].endswith(_WHOLE_UNITS)


class ViewDecoder:
    """The view's side: bytes of the stream in, recording lines out."""

    def __init__(self) -> None:
        self._z = zstandard.ZstdDecompressor().decompressobj()
        self._buf = b""
        self._probes: dict[str, _ProbeState] = {}

    def feed(self, data: bytes) -> tuple[list[bytes], int]:
        """The recording lines ``data`` completes, and the keepalives in it.
        ValueError (zstandard's, or a bad line) when the stream is corrupt."""
        self._buf += self._z.decompress(data)
        cut = self._buf.rfind(b"\n") + 1
        whole, self._buf = self._buf[:cut], self._buf[cut:]
        out: list[bytes] = []
        empty = 0
        for raw in whole.split(b"\n")[:-1]:
            if not raw:
                empty += 1
            elif raw[:1] == b"J":
                out.append(raw[1:])
            elif raw[:1] == b"K":
                probe, keys = json.loads(raw[1:])
                self._probes[probe] = _ProbeState(tuple(keys), self._probes.get(probe))
            elif raw[:1] == b"S":
                out.append(self._sample(raw[1:].decode("utf-8")))
            else:
                raise ValueError(f"not a view line: {raw[:40]!r}")
        return out, empty

    def _sample(self, text: str) -> bytes:
        probe, dt, dint, fields, extra_text = text.split("|", 4)
        state = self._probes[probe]
        t_ms = state.t_ms + int(dt)
        state.t_ms = t_ms
        tokens = fields.split(_SEP) if state.keys else []
        if len(tokens) != len(state.keys):
            raise ValueError(f"{probe}: {len(tokens)} values for {len(state.keys)} keys")
        for i, token in enumerate(tokens):
            if token:
                state.tokens[i] = token
        if extra_text[:1] == "=":
            state.extra = json.loads(extra_text[1:])
        elif extra_text[:1] == "+":
            state.extra = {**state.extra, **json.loads(extra_text[1:])}
        line: dict[str, Any] = {
            "type": "sample",
            "probe": probe,
            "t": t_ms / 1000,
            "interval": (int(dt) + int(dint)) / 1000,
            "values": {k: _value(tok) for k, tok in zip(state.keys, state.tokens, strict=True)},
        }
        if state.extra:
            line["extra"] = state.extra
        return json.dumps(line, **_DUMP).encode()  # type: ignore[arg-type]
