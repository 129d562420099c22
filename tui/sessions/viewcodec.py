"""The remote view's compact link (``probetop follow --compact``): a
recording's lines as a view needs them, a live value in a bit or two.

Contract:
- The stream opens with ``MAGIC`` and the format's version (``VERSION``);
  ``ViewDecoder`` refuses any other with a ``LinkError`` that says so.
  Then come frames: one byte of kind and length (``kind | length << 2``,
  length 63 followed by a varint of the rest), then the body. Kinds:
  ``KEEPALIVE`` (no body), ``TEXT`` (a block of one zstandard stream that
  lasts the connection: whole lines, ``J`` + a recording line as it is, or
  ``K`` + a probe's schema) and ``SAMPLES`` (one range-coded message of
  sample lines and device changes, ``rangecoder.py``).
- ``ViewEncoder.encode(lines, live=...)`` turns whole recording lines into
  the frames of one batch; ``keepalive()`` one frame. ``live`` False (the
  history a view rebuilds its panes from): every line goes as it is, so the
  view's statistics from the session's start are the recording's.
- ``ViewDecoder.feed(data)`` takes the bytes as they arrive and returns
  (``Fed``) the recording lines they complete (JSON bytes that
  ``decode_line`` reads as it reads a recording's), for each whether it came
  coded (live), and the keepalives. One line in, one out, in order: the
  view's line count (where a resume starts) is the recording's. Malformed
  input raises ``LinkError`` (a ValueError) naming what was wrong, never
  another exception.
- A live sample line goes as ``SAMPLES`` when it can: its probe's schema
  (value keys, and ``extra`` with its numbers as placeholders) once in
  ``TEXT``, again when ``extra``'s layout changes; then per sample
  the time and interval in ms, each value at the digits a pane prints
  (``_token``: ``VALUE_DIGITS`` significant ones; every whole digit below
  10000 and of units never given a k/M prefix; on a boundary of a coarser
  rounding, the side of it the value was on), and every digit of the
  numbers of ``extra``. Each number is coded as its difference from a
  prediction the decoder makes too (``_anchor``): the series' last value, a
  value of the same sample it equalled last time (loopback's rx and tx), its
  last value plus one it grew by (a running total), an earlier value of the
  same device times their ratio (``_learn``: bytes per I/O); or as one of
  its last few values (RECENT), or as the count a rate is of (COUNT). The
  decisions go through adaptive models per series, so a value that did not
  change costs a few hundredths of a bit. ``VIEW_OMITS`` (latency
  histograms and sums, read by the Prometheus exporters, never by a pane)
  stay on the host. A sample the coded form cannot carry (a string value,
  NaN, -0.0) goes as it is (``J``).
- A device that comes or goes (loop devices, veth pairs of other
  processes: most of a quiet host's bytes in format 2) is an ``ESCAPE`` in
  the message: a key change as steps over the probe's old devices (keep so
  many, drop one, add one: its name by how recently the link saw it, or
  spelled; its metrics as an old device's), and a live ``series_end`` line
  as whose, when (ms) and why. A new device's series start as a copy of
  the most alike device's (``_carried``), so an idle one costs next to
  nothing; a gone device's are forgotten on both sides.
- Lossy only in what no pane shows: digits beyond those a pane prints
  (every value prints as the host's: ``fmt_value``, k/M and MB/s included),
  time below 1 ms, ``VIEW_OMITS``, and a live series_end's ``summaries``
  (the view's line has ``{}``: a pane only drops the device's row and
  history; the report keeps them). The recording on the host is untouched;
  ``probetop follow`` without ``--compact`` sends it byte for byte.
- Both sides must decide alike: predictions use integers and IEEE
  arithmetic only (+ - * /, exactly rounded on every host), never ``log``.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import zstandard
from probetop.tui.sessions.rangecoder import (
    MAX_OVERRUN,
    Model,
    NumberModel,
    RangeDecoder,
    RangeEncoder,
)

MAGIC = b"PTVIEW"
VERSION = 3
KEEPALIVE, TEXT, SAMPLES = 0, 1, 2
MAX_FRAME = 64 << 20  # no batch comes near it; a bigger length is a corrupt stream
# Probe numbers are 8-bit symbols: 0 ends a message, ESCAPE starts a device
# change (a probe's keys, or a series_end line) coded in the message.
ESCAPE = 255
MAX_PROBES = ESCAPE - 1
KEYS_CHANGE, SERIES_END = 0, 1  # what follows an ESCAPE (one bit)
KEEP, DROP, ADD, DONE = range(4)  # a key change's steps over the old devices
REASONS = ("vanished", "unseen")  # series_end's reasons (linecheck: any text; others go as text)
MAX_KEYS = 1 << 16  # a key change that would make more is a corrupt stream
MAX_TEXT = 256  # a name on the link (linecheck's MAX_NAME)
NAMES_KEPT = 1024  # devices' names both sides remember (the oldest are forgotten)
VALUE_DIGITS = 3  # fmt_value prints 3 significant digits, and whole numbers below 10000
# Units fmt_value never gives a k/M prefix: a big value shows all its whole digits.
_WHOLE_UNITS = ("_ms", "_pct", "_mhz", "load1", "load5", "load15")
VIEW_OMITS = frozenset({"lat_hist", "clat_hist", "lat_sum_ms"})
ZSTD_LEVEL = 19  # the text frames: headers and reports, rare
SAMPLE_KEYS = frozenset({"type", "probe", "t", "interval", "values", "extra"})
_DUMP: dict[str, Any] = {"separators": (",", ":"), "ensure_ascii": False, "allow_nan": False}

# A value's kind, coded before it (3-bit symbol). COUNT: a DECIMAL sent as
# the count it is a rate of (n / interval): 1 packet in 1.003 s is 0.997/s,
# in 0.998 s 1.00/s; the count stays 1 where the digits jump.
# RECENT: one of the series' last few other values (a latency that moves
# between a histogram's buckets, the bounds of an RTT histogram).
SAME, DECIMAL, INT, NONE, TRUE, FALSE, COUNT, RECENT = range(8)
RECENT_KEPT = 4
# Token kinds never coded as a kind: a DECIMAL whose digits end on a boundary
# of a coarser rounding (0.715 ms, printed "0.72" or "0.71") and the side of
# it the value was on, coded after its digits (``_side``).
BELOW, ABOVE = 8, 9
_SIDES = (DECIMAL, BELOW, ABOVE)  # DECIMAL: exactly on it
MAX_COUNT = 1 << 32
_EXP_BOUND = 400
_HALF = Decimal("0.5")  # |exponent| of a finite float's decimal form is below this


class LinkError(ValueError):
    """The link's bytes are not a stream this probetop reads."""


# -- values ----------------------------------------------------------------
Token = tuple[int, int, int]  # (kind, mantissa, exponent): DECIMAL m x 10**e; INT m


def _token(value: Any, whole: bool) -> Token | None:
    """A value at the digits a pane prints, or None when it cannot travel coded.
    ``whole``: the pane shows every whole digit of it at any size."""
    if value is None:
        return (NONE, 0, 0)
    if value is True:
        return (TRUE, 0, 0)
    if value is False:
        return (FALSE, 0, 0)
    if isinstance(value, int):
        return (INT, value, 0)
    if not isinstance(value, float) or not math.isfinite(value):
        return None
    if value == 0.0:
        return None if math.copysign(1.0, value) < 0 else (DECIMAL, 0, 0)
    magnitude = len(str(int(abs(value))))  # whole digits
    digits = VALUE_DIGITS if magnitude < 4 or (magnitude > 4 and not whole) else magnitude
    return _digits(value, digits)


def _digits(value: float, digits: int) -> Token:
    """``value`` rounded to ``digits`` significant digits: m x 10**e.

    Rounded so that any coarser rounding of it (a pane printing fewer
    digits: 0.715 ms as "0.72", 24500 B/s as "0.02" MB/s, 12350 B/s as
    "12.3k") gives what it gives of ``value``. When the nearest lands on a
    boundary of a coarser rounding (its last non-zero digit a 5), the token
    says on which side of it ``value`` lies (BELOW, ABOVE: read back a tenth
    of a unit off it); when ``value`` lies halfway, or the nearest reaches
    the next power of ten (999803 -> 1.00e6, printed "1.00M" where 999803 is
    "1000k"), a digit more, truncated, its last digit moved off 0 and 5
    unless exact (round-to-odd's rule, in decimal)."""
    exact = Decimal(value)
    e = exact.adjusted() - (digits - 1)
    scaled = exact.scaleb(-e)
    m = int(scaled.to_integral_value(ROUND_HALF_EVEN))
    if abs(m) < 10**digits and abs(scaled - int(scaled)) != _HALF:
        if not _boundary(m) or scaled == m:
            return (DECIMAL, m, e)
        return (BELOW if scaled < m else ABOVE, m, e)
    e -= 1
    scaled = exact.scaleb(-e)
    m = int(scaled)  # toward zero
    if m != scaled and abs(m) % 10 in (0, 5):
        m += 1 if value > 0 else -1
    return (DECIMAL, m, e)


def _boundary(m: int) -> bool:
    """Whether m's last non-zero digit is a 5 (a boundary of a coarser rounding)."""
    m = abs(m)
    while m and m % 10 == 0:
        m //= 10
    return m % 10 == 5


def _base(kind: int) -> int:
    return DECIMAL if kind in (BELOW, ABOVE) else kind


def _value(token: Token) -> Any:
    kind, m, e = token
    if kind == DECIMAL:
        return float(f"{m}e{e}")
    if kind in (BELOW, ABOVE):  # a tenth of a unit off the boundary, on its side
        return float(f"{10 * m + (1 if kind == ABOVE else -1)}e{e - 1}")
    if kind == INT:
        return m
    return {NONE: None, TRUE: True, FALSE: False}[kind]


def _whole(key: str) -> bool:
    """Whether the pane prints every whole digit of ``key``'s values (no k/M)."""
    return key.split("@", 1)[0].endswith(_WHOLE_UNITS)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shape(extra: Any) -> Any:
    """``extra`` with its numbers as 0: two samples with the same shape
    differ only in numbers, which travel coded."""
    if isinstance(extra, dict):
        return {k: _shape(v) for k, v in extra.items()}
    if isinstance(extra, list):
        return [_shape(v) for v in extra]
    return 0 if _is_number(extra) else extra


def _numbers(extra: Any, out: list[Token]) -> list[Token] | None:
    """The numbers of ``extra`` in order (dict order, then list order), every
    digit (a float as its shortest repr), or None when one cannot travel."""
    if isinstance(extra, dict):
        for v in extra.values():
            if _numbers(v, out) is None:
                return None
    elif isinstance(extra, list):
        for v in extra:
            if _numbers(v, out) is None:
                return None
    elif isinstance(extra, int) and not isinstance(extra, bool):
        out.append((INT, extra, 0))
    elif isinstance(extra, float):
        if not math.isfinite(extra) or (extra == 0.0 and math.copysign(1.0, extra) < 0):
            return None
        sign, digits, exponent = Decimal(repr(extra)).as_tuple()
        assert isinstance(exponent, int)  # finite
        m = int("".join(map(str, digits)))
        out.append((DECIMAL, -m if sign else m, exponent))
    return out


def _fill(shape: Any, numbers: list[Token], at: list[int]) -> Any:
    """``shape`` with its numbers taken from ``numbers`` in order."""
    if isinstance(shape, dict):
        return {k: _fill(v, numbers, at) for k, v in shape.items()}
    if isinstance(shape, list):
        return [_fill(v, numbers, at) for v in shape]
    if _is_number(shape):
        at[0] += 1
        return _value(numbers[at[0] - 1])
    return shape


# -- the state both sides keep ----------------------------------------------
@dataclass
class _Series:
    """One number's history and models (a value key, or an integer of extra)."""

    kind: Model = field(default_factory=lambda: Model(8))
    same_exp: Model = field(default_factory=Model)
    exp: NumberModel = field(default_factory=NumberModel)
    diff: NumberModel = field(default_factory=NumberModel)
    fresh: NumberModel = field(default_factory=NumberModel)  # a value with no prediction
    count: NumberModel = field(default_factory=NumberModel)  # COUNT: n less the last n
    side: Model = field(default_factory=lambda: Model(4))  # a boundary's side (_SIDES)
    # _learn: the value's last float, how well it predicted itself, and per
    # earlier field the last ratio to it and how well that predicted
    prev: float | None = None
    own: float = 1.0
    ratios: dict[int, float] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    ratio: tuple[int, float] | None = None
    recent: list[Token] = field(default_factory=list)  # RECENT's, newest first
    which_recent: Model = field(default_factory=lambda: Model(RECENT_KEPT))
    last: Token | None = None
    last_n: int = 0  # the count the last value stands for
    link: tuple[str, int] | None = None  # ("eq" | "inc", field index): the prediction

    def clone(self) -> _Series:
        """A new device's series that starts as this one is (models, last
        values), without its ties to other fields."""
        return replace(
            self,
            kind=self.kind.copy(), same_exp=self.same_exp.copy(), exp=self.exp.copy(),
            diff=self.diff.copy(), fresh=self.fresh.copy(), count=self.count.copy(),
            side=self.side.copy(), which_recent=self.which_recent.copy(), ratios={},
            scores={}, ratio=None, recent=list(self.recent), link=None,
        )  # fmt: skip


@dataclass
class _Probe:
    name: str
    index: int
    keys: tuple[str, ...]
    shape: Any
    extra_numbers: list[Token]
    whole: tuple[bool, ...] = ()
    groups: list[str | None] = field(default_factory=list)  # _learn's devices
    peers: list[list[int]] = field(default_factory=list)  # _learn's pairs (_peers)
    t_ms: int = 0
    dt_ms: int = 0
    time: NumberModel = field(default_factory=NumberModel)
    gap: NumberModel = field(default_factory=NumberModel)
    series: dict[str, _Series] = field(default_factory=dict)

    def fields(self) -> list[_Series]:
        names = [*self.keys, *(f"\0x{i}" for i in range(len(self.extra_numbers)))]
        return [_series(self.series, n) for n in names]


def _series(series: dict[str, _Series], name: str) -> _Series:
    """``series[name]``, made when missing. Not ``setdefault(name, _Series())``:
    that builds a _Series (23 adaptive models) on every call and throws it
    away, which was a third of the link's CPU per sample on both sides."""
    s = series.get(name)
    if s is None:
        s = series[name] = _Series()
    return s


Group = tuple[str | None, tuple[str, ...]]  # a device (None: none) and its metric names


def _groups(keys: tuple[str, ...]) -> list[Group]:
    """A probe's keys as runs of one device each (``read_iops@loop0`` ...)."""
    out: list[tuple[str | None, list[str]]] = []
    for key in keys:
        name, at, device = key.partition("@")
        entity = device if at else None
        if out and out[-1][0] == entity:
            out[-1][1].append(name if at else key)
        else:
            out.append((entity, [name if at else key]))
    return [(entity, tuple(names)) for entity, names in out]


def _keys(groups: list[Group]) -> tuple[str, ...]:
    return tuple(n if e is None else f"{n}@{e}" for e, names in groups for n in names)


def _devices(keys: tuple[str, ...]) -> list[str]:
    """The devices a probe's keys name, in order, once each."""
    return list(dict.fromkeys(k.partition("@")[2] for k in keys if "@" in k))


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _carried(old: _Probe, keys: tuple[str, ...], n_numbers: int) -> dict[str, _Series]:
    """The series a probe keeps across a key change: those of kept keys (a
    gone device's are forgotten, so churning devices cost no memory), and
    for a new device's key a copy of the same metric's series of the kept
    device whose name starts most like it (the last one on a tie): a new
    idle veth or loop device costs next to nothing from its first value."""
    names = [*keys, *(f"\0x{i}" for i in range(n_numbers))]
    out = {n: old.series[n] for n in names if n in old.series}
    by_metric: dict[str, list[str]] = {}
    for key in keys:
        if key in old.series and "@" in key:
            by_metric.setdefault(key.partition("@")[0], []).append(key)
    for key in keys:
        if key in out or "@" not in key:
            continue
        metric, _, device = key.partition("@")
        like = by_metric.get(metric)
        if like:
            best = max(
                range(len(like)),
                key=lambda j: (_shared_prefix(like[j].partition("@")[2], device), j),
            )
            out[key] = old.series[like[best]].clone()
    return out


class _State:
    """What encoder and decoder both know: probes, schemas, models, names."""

    def __init__(self) -> None:
        self.probes: dict[str, _Probe] = {}
        self.order: list[_Probe] = []
        self.which: dict[int, Model] = {}  # next probe's number, given the previous one's
        self.names: list[str] = []  # devices' names seen on this link, oldest first
        # The models of a device change (after an ESCAPE)
        self.what = Model()  # KEYS_CHANGE or SERIES_END
        self.escaped = Model(256)  # whose
        self.keep = NumberModel()  # old devices kept before the next step
        self.step = Model(4)  # DROP, ADD, DONE
        self.named = Model()  # an added group has a device
        self.ref = NumberModel()  # a name: how recently seen (0: spelled out)
        self.like = NumberModel()  # an added device's metrics: as old group j's (j+1; 0 spelled)
        self.length = NumberModel()  # a spelled text's bytes, a spelled list's length
        self.chars: dict[int, Model] = {}  # a spelled byte, given the one before
        self.end_device = NumberModel()  # series_end: which of the probe's devices (0: named)
        self.end_t = NumberModel()  # its t less the probe's next sample's, expected
        self.end_last = NumberModel()  # its last_t less the probe's last sample's
        self.end_reason = Model()

    def which_model(self, last: int) -> Model:
        model = self.which.get(last)
        if model is None:  # made only when missing (see _series)
            model = self.which[last] = Model(256)
        return model

    def char_model(self, prev: int) -> Model:
        model = self.chars.get(prev)
        if model is None:
            model = self.chars[prev] = Model(256)
        return model

    def schema(
        self, probe: str, keys: tuple[str, ...], shape: Any, numbers: list[Token] | None
    ) -> _Probe:
        """A probe's keys and extra's layout, new or changed. ``numbers``: the
        extra's numbers sent with it (None: a key change, extra as it was)."""
        old = self.probes.get(probe)
        if old is None:
            if len(self.order) >= MAX_PROBES:
                raise LinkError(f"more than {MAX_PROBES} probes on one link")
            new = _Probe(probe, len(self.order) + 1, keys, shape, numbers or [])
            self.order.append(new)
        else:  # a device came or went: kept keys keep their series and models
            kept = old.extra_numbers if numbers is None else numbers
            new = _Probe(probe, old.index, keys, shape, kept, t_ms=old.t_ms, dt_ms=old.dt_ms,
                         time=old.time, gap=old.gap,
                         series=_carried(old, keys, len(kept)))  # fmt: skip
            self.order[old.index - 1] = new
        for i, tok in enumerate(numbers or []):  # the schema's numbers are the last values
            s = _series(new.series, f"\0x{i}")
            s.last, s.link = tok, None
        new.whole = tuple(_whole(k) for k in keys)
        new.groups = [k.split("@", 1)[1] if "@" in k else "" for k in keys]
        new.groups += [None] * len(new.extra_numbers)
        new.peers = _peers(new.groups)
        for series in new.series.values():  # field numbers moved: links and ratios anew
            series.ratios, series.scores, series.ratio, series.link = {}, {}, None, None
        self.probes[probe] = new
        known = set(self.names)
        for device in _devices(keys):
            if device not in known:
                self.names.append(device)
                known.add(device)
        del self.names[:-NAMES_KEPT]
        return new


def _anchor(
    fields: list[_Series], tokens: list[Token], i: int, kind: int, whole: bool
) -> tuple[int, int] | None:
    """The (exponent, mantissa) field ``i`` is predicted to have: an earlier
    field of this sample it equalled last time, its last value plus one it
    grew by last time, an earlier field times the ratio between them (read
    bytes per read), or its last value; None: nothing to go by."""
    s = fields[i]
    last = s.last
    if last is None or _base(last[0]) != kind:
        return None
    if s.link is not None and s.link[1] < i:
        how, j = s.link
        other = tokens[j]
        if _base(other[0]) in (DECIMAL, INT):
            if how == "eq":
                return other[2], other[1]
            if other[2] == last[2]:
                return last[2], last[1] + other[1]
    if s.ratio is not None and s.ratio[0] < i and kind == DECIMAL:
        j, ratio = s.ratio
        other = tokens[j]
        if _base(other[0]) == DECIMAL and other[1]:
            guess = _token(_value(other) * ratio, whole)
            if guess is not None and guess[1]:
                return guess[2], guess[1]
    return last[2], last[1]


def _guess(anchor: tuple[int, int] | None, exp: int) -> int | None:
    """The mantissa at ``exp`` that ``anchor`` predicts (a digit more or less
    than it has: rescaled), or None: the number is coded whole."""
    if anchor is None:
        return None
    at, m = anchor
    if at == exp:
        return m
    if at == exp + 1 and m:  # a digit more than predicted (99.9 -> 100.5, 0.72 -> 0.7149)
        return m * 10
    if at == exp - 1 and m:
        return (abs(m) + 5) // 10 * (1 if m > 0 else -1)
    return None


def _rate(n: int, interval_ms: int, whole: bool) -> Token | None:
    """The token of ``n`` per second over ``interval_ms`` (both sides compute it)."""
    return _token(n * 1000.0 / interval_ms, whole) if interval_ms > 0 else None


def _counts(fields: list[_Series], tokens: list[Token], interval_ms: int) -> None:
    """After a sample: the count each value stands for, the next COUNT's base."""
    for s, tok in zip(fields, tokens, strict=False):
        if _base(tok[0]) == DECIMAL and interval_ms > 0:
            n = round(_value(tok) * interval_ms / 1000.0)
            s.last_n = n if abs(n) < MAX_COUNT else 0


def _relink(fields: list[_Series], tokens: list[Token]) -> None:
    """After a sample: each number's prediction for the next one (the first
    earlier number it equalled, or grew by; else its own last value)."""
    seen: dict[tuple[int, int], int] = {}
    for i, (s, tok) in enumerate(zip(fields, tokens, strict=True)):
        s.link = None
        if _base(tok[0]) in (DECIMAL, INT):
            value = (tok[1], tok[2])
            if value in seen:
                s.link = ("eq", seen[value])
            elif s.last is not None and _base(s.last[0]) == _base(tok[0]) and s.last[2] == tok[2]:
                grew = (tok[1] - s.last[1], tok[2])
                if grew[0] and grew in seen:
                    s.link = ("inc", seen[grew])
            seen.setdefault(value, i)
        if s.last is not None and tok != s.last:
            s.recent = [s.last, *(r for r in s.recent if r != s.last and r != tok)]
            del s.recent[RECENT_KEPT:]
        s.last = tok


def _miss(actual: float, guess: float) -> float:
    """How far off ``guess`` was, 0 to 2 (plain arithmetic: both hosts agree)."""
    top = max(abs(actual), abs(guess))
    return abs(actual - guess) / top if top else 0.0


def _peers(groups: list[str | None]) -> list[list[int]]:
    """For each field, the earlier fields ``_learn`` relates it to: those of
    its device and the probe-wide ones ("" : every earlier one); none for
    extra's numbers (None). Worked out once per schema: a host with hundreds
    of interfaces would otherwise pay for every pair on every sample."""
    out: list[list[int]] = []
    probe_wide: list[int] = []
    by_group: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        if group is None:
            out.append([])
            continue
        if group == "":
            out.append([j for j in range(i) if groups[j] is not None])
            probe_wide.append(i)
        else:  # its device's and the probe-wide ones, in field order
            out.append(sorted([*probe_wide, *by_group.get(group, [])]))
            by_group.setdefault(group, []).append(i)
    return out


def _learn(fields: list[_Series], tokens: list[Token], probe: _Probe) -> None:
    """After a sample: for each value, the earlier value of the same device
    (``probe.groups``; "" for a probe-wide key) whose ratio to it held best
    lately, when it held much better than the value itself
    (``_Series.ratio``). Only IEEE arithmetic (+ - * /, exactly rounded
    everywhere), so the view decides as the host did."""
    values = [_value(t) if _base(t[0]) == DECIMAL and t[1] else None for t in tokens]
    for i, s in enumerate(fields):
        v, group = values[i], probe.groups[i]
        if v is None or group is None:
            continue
        if s.prev is not None:
            s.own = s.own * 0.75 + _miss(v, s.prev) * 0.25
        s.prev = v
        for j in probe.peers[i]:
            w = values[j]
            if w is None:
                continue
            ratio = s.ratios.get(j)
            if ratio is not None:
                s.scores[j] = s.scores.get(j, 1.0) * 0.75 + _miss(v, w * ratio) * 0.25
            s.ratios[j] = v / w
        best = min(s.scores, key=s.scores.__getitem__, default=None)
        s.ratio = (
            (best, s.ratios[best]) if best is not None and s.scores[best] < 0.5 * s.own else None
        )


# -- the host's side ---------------------------------------------------------
def _frame(kind: int, body: bytes) -> bytes:
    n = len(body)
    if n < 63:
        return bytes([kind | n << 2]) + body
    rest, out = n - 63, bytearray([kind | 63 << 2])
    while True:
        out.append((rest & 0x7F) | (0x80 if rest > 0x7F else 0))
        rest >>= 7
        if not rest:
            return bytes(out) + body


class ViewEncoder:
    """The host's side (``probetop follow --compact``)."""

    def __init__(self) -> None:
        self._state = _State()
        self._z = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
        self._started = False
        self._late = 0  # the last sample's lateness in this message (ms)

    def encode(self, lines: list[bytes], *, live: bool = True) -> bytes:
        out = bytearray(self._start())
        text: list[bytes] = []
        rc: RangeEncoder | None = None
        last_index = 0
        for raw in lines:
            coded = self._parse(raw) if live else None
            if isinstance(coded, _End) and coded.probe not in self._state.probes:
                coded = None  # a series_end of a probe with no schema here yet
            if coded is None:
                if rc is not None:
                    out += self._samples(rc, last_index)
                    rc, last_index = None, 0
                text.append(b"J" + raw + b"\n")
                continue
            if isinstance(coded, _End):
                if text:
                    out += self._text(text)
                    text = []
                if rc is None:
                    rc, self._late = RangeEncoder(), 0
                self._end(rc, last_index, coded)
                continue
            probe, line, tokens, numbers = coded
            state = self._state.probes.get(probe)
            shape = _shape(_kept(line))
            keys = tuple(line["values"])
            if state is None or state.shape != shape:
                if rc is not None:
                    out += self._samples(rc, last_index)
                    rc, last_index = None, 0
                schema = {"probe": probe, "keys": keys, "extra": _kept(line)}
                text.append(b"K" + json.dumps(schema, **_DUMP).encode() + b"\n")
                state = self._state.schema(probe, keys, shape, numbers)
            if text:
                out += self._text(text)
                text = []
            if rc is None:
                rc, self._late = RangeEncoder(), 0
            if state.keys != keys:  # a device came or went: the change, in the message
                self._keys_change(rc, last_index, state, keys)
                state = self._state.schema(probe, keys, shape, None)
            self._sample(rc, last_index, state, line, [*tokens, *numbers])
            last_index = state.index
        if rc is not None:
            out += self._samples(rc, last_index)
        if text:
            out += self._text(text)
        return bytes(out)

    def _escape(self, rc: RangeEncoder, last_index: int, what: int, probe: _Probe) -> None:
        st = self._state
        rc.symbol(st.which_model(last_index), ESCAPE, 8)
        rc.bit(st.what, 0, what)
        rc.symbol(st.escaped, probe.index, 8)

    def _keys_change(
        self, rc: RangeEncoder, last_index: int, probe: _Probe, keys: tuple[str, ...]
    ) -> None:
        """A probe's new keys as steps over its old devices: keep so many,
        drop one, add one (its name, and its metrics as an old device's)."""
        st = self._state
        self._escape(rc, last_index, KEYS_CHANGE, probe)
        old, new = _groups(probe.keys), _groups(keys)
        run = 0
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                run += i2 - i1
                continue
            for step, groups in ((DROP, [None] * (i2 - i1)), (ADD, new[j1:j2])):
                for group in groups:
                    rc.number(st.keep, run)
                    run = 0
                    rc.symbol(st.step, step, 2)
                    if group is not None:
                        self._group(rc, old, group)
        rc.number(st.keep, run)
        rc.symbol(st.step, DONE, 2)

    def _group(self, rc: RangeEncoder, old: list[Group], group: Group) -> None:
        st = self._state
        device, metrics = group
        rc.bit(st.named, 0, device is not None)
        if device is not None:
            self._name(rc, device)
        like = next((j for j, g in enumerate(old) if g[1] == metrics), None)
        if like is not None:
            rc.number(st.like, like + 1)
            return
        rc.number(st.like, 0)
        rc.number(st.length, len(metrics))
        for metric in metrics:
            self._spell(rc, metric)

    def _name(self, rc: RangeEncoder, name: str) -> None:
        """A device's name: how recently it was seen on the link, or spelled."""
        names = self._state.names
        if name in names:
            rc.number(self._state.ref, len(names) - names.index(name))
        else:
            rc.number(self._state.ref, 0)
            self._spell(rc, name)

    def _spell(self, rc: RangeEncoder, text: str) -> None:
        data = text.encode()
        rc.number(self._state.length, len(data))
        prev = 0
        for byte in data:
            rc.symbol(self._state.char_model(prev), byte, 8)
            prev = byte

    def _end(self, rc: RangeEncoder, last_index: int, end: _End) -> None:
        """A series_end line: whose, when, why; its summaries stay on the host."""
        st = self._state
        probe = st.probes[end.probe]
        self._escape(rc, last_index, SERIES_END, probe)
        devices = _devices(probe.keys)
        at = devices.index(end.entity) + 1 if end.entity in devices else 0
        rc.number(st.end_device, at)
        if not at:
            self._name(rc, end.entity)
        rc.number(st.end_t, end.t_ms - probe.t_ms - probe.dt_ms)
        rc.number(st.end_last, end.last_ms - probe.t_ms)
        rc.bit(st.end_reason, 0, REASONS.index(end.reason))

    def keepalive(self) -> bytes:
        return self._start() + _frame(KEEPALIVE, b"")

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        return MAGIC + bytes([VERSION])

    def _text(self, lines: list[bytes]) -> bytes:
        data = b"".join(lines)
        body = self._z.compress(data) + self._z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        return _frame(TEXT, body)

    def _samples(self, rc: RangeEncoder, last_index: int) -> bytes:
        rc.symbol(self._state.which_model(last_index), 0, 8)
        return _frame(SAMPLES, rc.finish())

    @staticmethod
    def _parse(
        raw: bytes,
    ) -> tuple[str, dict[str, Any], list[Token], list[Token]] | _End | None:
        """A live sample line's parts, a series_end line's, or None when it
        goes as it is."""
        if raw.startswith(b'{"type":"series_end"'):
            return _End.parse(raw)
        if not raw.startswith(b'{"type":"sample"'):
            return None
        try:
            line = json.loads(raw)
        except ValueError:
            return None
        values, extra, probe = line.get("values"), line.get("extra", {}), line.get("probe")
        if (
            not set(line) <= SAMPLE_KEYS
            or not isinstance(values, dict)
            or not isinstance(extra, dict)
            or not isinstance(probe, str)
            or not isinstance(line.get("t"), (int, float))
            or not isinstance(line.get("interval"), (int, float))
        ):
            return None
        tokens = [_token(v, _whole(k)) for k, v in values.items()]
        if any(t is None for t in tokens):
            return None
        numbers = _numbers(_kept(line), [])
        if numbers is None:
            return None
        coded = [t for t in tokens if t is not None]
        if any(abs(t[1]).bit_length() > 64 or abs(t[2]) > _EXP_BOUND for t in coded + numbers):
            return None
        return probe, line, coded, numbers

    def _sample(
        self,
        rc: RangeEncoder,
        last_index: int,
        probe: _Probe,
        line: dict[str, Any],
        all_tokens: list[Token],
    ) -> None:
        """One sample: its time, then each value and number of extra."""
        rc.symbol(self._state.which_model(last_index), probe.index, 8)
        t_ms = round(float(line["t"]) * 1000)
        interval_ms = round(float(line["interval"]) * 1000)
        dt = t_ms - probe.t_ms
        # Samples come at a steady pace, and the probes tick together: how
        # much this one came late is about how much the one before it did.
        late = dt - probe.dt_ms
        rc.number(probe.time, late - self._late)
        rc.number(probe.gap, interval_ms - dt)  # interval: about the time since the last
        probe.t_ms, probe.dt_ms, self._late = t_ms, dt, late
        fields = probe.fields()
        values = list(line["values"].values())
        interval_s = float(line["interval"])
        for i, (s, tok) in enumerate(zip(fields, all_tokens, strict=True)):
            if tok == s.last:
                rc.symbol(s.kind, SAME, 3)
                continue
            kind = _base(tok[0])
            whole = probe.whole[i] if i < len(values) else False
            anchor = _anchor(fields, all_tokens, i, kind, whole)
            n = self._count(s, tok, values[i], interval_s, interval_ms, whole) if (
                i < len(values) and kind == DECIMAL and anchor != (tok[2], tok[1])
            ) else None  # fmt: skip
            if n is not None:
                rc.symbol(s.kind, COUNT, 3)
                rc.number(s.count, n - s.last_n)
                continue
            if tok in s.recent and anchor != (tok[2], tok[1]):
                rc.symbol(s.kind, RECENT, 3)
                rc.symbol(s.which_recent, s.recent.index(tok), 2)
                continue
            rc.symbol(s.kind, kind, 3)
            if kind == DECIMAL:
                was = anchor[0] if anchor is not None else 0
                rc.bit(s.same_exp, 0, int(was == tok[2]))
                if was != tok[2]:
                    rc.number(s.exp, tok[2] - was)
            if kind in (DECIMAL, INT):
                guess = _guess(anchor, tok[2])
                if guess is None:
                    rc.number(s.fresh, tok[1])
                else:
                    rc.number(s.diff, tok[1] - guess)
            if kind == DECIMAL and _boundary(tok[1]):
                rc.symbol(s.side, _SIDES.index(tok[0]), 2)
        _relink(fields, all_tokens)
        _counts(fields[: len(values)], all_tokens, interval_ms)
        _learn(fields, all_tokens, probe)

    @staticmethod
    def _count(
        s: _Series, tok: Token, value: float, interval_s: float, interval_ms: int, whole: bool
    ) -> int | None:
        """The count ``value`` is a rate of, when the view gets ``tok`` back from it."""
        n = round(value * interval_s)
        if abs(value * interval_s - n) > 1e-3 or abs(n) >= MAX_COUNT:
            return None
        return n if _rate(n, interval_ms, whole) == tok else None


END_KEYS = ("type", "probe", "entity", "t", "last_t", "reason", "summaries")
_MAX_MS = 1 << 60


@dataclass(frozen=True)
class _End:
    """A live series_end line as the link carries it: which probe's device,
    its t and last_t in ms, its reason. Its summaries (each metric's count,
    min, mean, max over the device's life) stay in the host's recording: the
    panes only drop the device's row and history."""

    probe: str
    entity: str
    t_ms: int
    last_ms: int
    reason: str

    @classmethod
    def parse(cls, raw: bytes) -> _End | None:
        """The coded form of a series_end line, or None when it goes as it is."""
        try:
            line = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(line, dict) or tuple(line) != END_KEYS:
            return None
        probe, entity, reason = line["probe"], line["entity"], line["reason"]
        times = (line["t"], line["last_t"])
        if (
            not isinstance(probe, str)
            or not isinstance(entity, str)
            or not 0 < len(entity.encode()) <= MAX_TEXT
            or reason not in REASONS
            or not isinstance(line["summaries"], dict)
            or not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times)
            or not all(math.isfinite(t) and abs(t) * 1000 < _MAX_MS for t in times)
        ):
            return None
        t_ms, last_ms = (round(float(t) * 1000) for t in times)
        return cls(probe, entity, t_ms, last_ms, reason)

    def line(self) -> bytes:
        doc = {"type": "series_end", "probe": self.probe, "entity": self.entity,
               "t": self.t_ms / 1000, "last_t": self.last_ms / 1000, "reason": self.reason,
               "summaries": {}}  # fmt: skip
        return json.dumps(doc, **_DUMP).encode()


def _kept(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.get("extra", {}).items() if k not in VIEW_OMITS}


# -- the view's side ---------------------------------------------------------
@dataclass
class Fed:
    """What a ``feed`` completed: recording lines in order, for each whether
    it came coded (a live sample batch) or as it is, and keepalives."""

    lines: list[bytes] = field(default_factory=list)
    coded: list[bool] = field(default_factory=list)
    keepalives: int = 0


class ViewDecoder:
    """The view's side: bytes of the stream in, recording lines out."""

    def __init__(self) -> None:
        self._state = _State()
        self._z = zstandard.ZstdDecompressor().decompressobj()
        self._buf = b""
        self._started = False
        self._late = 0

    def feed(self, data: bytes) -> Fed:
        """The recording lines ``data`` completes, and the keepalives in it."""
        self._buf += data
        out = Fed()
        if not self._started:
            if len(self._buf) < len(MAGIC) + 1:
                if not MAGIC.startswith(self._buf[: len(MAGIC)]):
                    raise LinkError(f"not a probetop view stream (starts {self._buf[:8]!r})")
                return out
            if self._buf[: len(MAGIC)] != MAGIC:
                raise LinkError(f"not a probetop view stream (starts {self._buf[:8]!r})")
            version = self._buf[len(MAGIC)]
            if version != VERSION:
                raise LinkError(
                    f"view stream format {version}; this probetop reads format {VERSION} "
                    "(install the same probetop version on both hosts)"
                )
            self._buf = self._buf[len(MAGIC) + 1 :]
            self._started = True
        while True:
            frame = self._next_frame()
            if frame is None:
                return out
            kind, body = frame
            if kind == KEEPALIVE:
                if body:
                    raise LinkError("a keepalive frame with a body")
                out.keepalives += 1
            elif kind == TEXT:
                lines = self._text(body)
                out.lines += lines
                out.coded += [False] * len(lines)
            elif kind == SAMPLES:
                try:
                    lines = self._samples(body)
                except (IndexError, KeyError, TypeError, OverflowError) as exc:
                    # damage the checks did not name (or a bug): one line, no traceback
                    raise LinkError(f"a sample frame that does not decode ({exc!r})") from None
                out.lines += lines
                out.coded += [True] * len(lines)
            else:
                raise LinkError(f"unknown frame kind {kind}")

    def _next_frame(self) -> tuple[int, bytes] | None:
        buf = self._buf
        if not buf:
            return None
        kind, n, pos = buf[0] & 3, buf[0] >> 2, 1
        if n == 63:
            rest, shift = 0, 0
            while True:
                if pos >= len(buf):
                    return None
                byte = buf[pos]
                pos += 1
                rest |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
                if shift > 35:
                    raise LinkError("a frame length longer than 5 bytes")
            n = 63 + rest
        if n > MAX_FRAME:
            raise LinkError(f"a frame of {n} bytes (at most {MAX_FRAME})")
        if len(buf) < pos + n:
            return None
        self._buf = buf[pos + n :]
        return kind, buf[pos : pos + n]

    def _text(self, body: bytes) -> list[bytes]:
        try:
            data = self._z.decompress(body)
        except zstandard.ZstdError as exc:
            raise LinkError(f"a text frame that does not decompress: {exc}") from None
        if data and not data.endswith(b"\n"):
            raise LinkError("a text frame that ends inside a line")
        out = []
        for raw in data.split(b"\n")[:-1]:
            if raw[:1] == b"J":
                out.append(raw[1:])
            elif raw[:1] == b"K":
                self._schema(raw[1:])
            else:
                raise LinkError(f"not a view line: {raw[:40]!r}")
        return out

    def _schema(self, raw: bytes) -> None:
        try:
            schema = json.loads(raw)
            probe, keys, extra = schema["probe"], schema["keys"], schema["extra"]
        except (ValueError, KeyError, TypeError):
            raise LinkError(f"a bad schema line: {raw[:60]!r}") from None
        if (
            not isinstance(probe, str)
            or not isinstance(keys, list)
            or not all(isinstance(k, str) for k in keys)
            or not isinstance(extra, dict)
        ):
            raise LinkError(f"a bad schema line: {raw[:60]!r}")
        numbers = _numbers(extra, [])
        if numbers is None:
            raise LinkError(f"a bad schema line: {raw[:60]!r}")
        self._state.schema(probe, tuple(keys), _shape(extra), numbers)

    def _samples(self, body: bytes) -> list[bytes]:
        rc = RangeDecoder(body)
        out = []
        last_index = 0
        self._late = 0
        while True:
            index = rc.symbol(self._state.which_model(last_index), 8)
            if not index:
                break
            if index == ESCAPE:
                end = self._escape(rc)
                if end is not None:
                    out.append(end.line())
                if rc.overrun > MAX_OVERRUN:
                    raise LinkError("a sample frame that ends inside a device change")
                continue
            if index > len(self._state.order):
                raise LinkError(f"a sample of probe {index}, which has no schema")
            probe = self._state.order[index - 1]
            out.append(self._sample(rc, probe))
            last_index = index
            if rc.overrun > MAX_OVERRUN:
                raise LinkError("a sample frame that ends inside a sample")
        if rc.overrun > MAX_OVERRUN:
            raise LinkError("a sample frame that ends inside a sample")
        return out

    def _escape(self, rc: RangeDecoder) -> _End | None:
        """A device change: a probe's new keys (applied), or a series_end."""
        st = self._state
        what = rc.bit(st.what, 0)
        index = rc.symbol(st.escaped, 8)
        if not 0 < index <= len(st.order):
            raise LinkError(f"a device change of probe {index}, which has no schema")
        probe = st.order[index - 1]
        if what == KEYS_CHANGE:
            keys = self._keys_change(rc, probe)
            st.schema(probe.name, keys, probe.shape, None)
            return None
        devices = _devices(probe.keys)
        at = rc.number(st.end_device)
        if not 0 <= at <= len(devices):
            raise LinkError(f"series_end of device {at} of {len(devices)}")
        entity = devices[at - 1] if at else self._name(rc)
        if not entity:
            raise LinkError("series_end of a device with no name")
        t_ms = probe.t_ms + probe.dt_ms + rc.number(st.end_t)
        last_ms = probe.t_ms + rc.number(st.end_last)
        reason = REASONS[rc.bit(st.end_reason, 0)]
        return _End(probe.name, entity, t_ms, last_ms, reason)

    def _keys_change(self, rc: RangeDecoder, probe: _Probe) -> tuple[str, ...]:
        st = self._state
        old = _groups(probe.keys)
        new: list[Group] = []
        at = 0
        while True:
            run = rc.number(st.keep)
            if not 0 <= run <= len(old) - at:
                raise LinkError(f"a key change that keeps {run} of {len(old) - at} devices")
            new += old[at : at + run]
            at += run
            step = rc.symbol(st.step, 2)
            if step == DONE:
                if at != len(old):
                    raise LinkError("a key change that ends before the old keys")
                break
            if step == DROP:
                if at >= len(old):
                    raise LinkError("a key change that drops past the old keys")
                at += 1
            elif step == ADD:
                new.append(self._group(rc, old))
            else:
                raise LinkError(f"a key change step {step}")
            if len(new) > MAX_KEYS or rc.overrun > MAX_OVERRUN:
                raise LinkError("a key change that does not end")
        keys = _keys(new)
        if len(keys) > MAX_KEYS or len(set(keys)) != len(keys):
            raise LinkError("a key change that repeats a key")
        return keys

    def _group(self, rc: RangeDecoder, old: list[Group]) -> Group:
        st = self._state
        device = self._name(rc) if rc.bit(st.named, 0) else None
        like = rc.number(st.like)
        if like:
            if not 0 < like <= len(old):
                raise LinkError(f"an added device like device {like} of {len(old)}")
            return device, old[like - 1][1]
        n = rc.number(st.length)
        if not 0 < n <= MAX_KEYS:
            raise LinkError(f"an added device with {n} metrics")
        metrics = []
        for _ in range(n):
            metrics.append(self._spell(rc))
            if rc.overrun > MAX_OVERRUN:
                raise LinkError("a sample frame that ends inside an added device")
        return device, tuple(metrics)

    def _name(self, rc: RangeDecoder) -> str:
        names = self._state.names
        back = rc.number(self._state.ref)
        if not back:
            return self._spell(rc)
        if not 0 < back <= len(names):
            raise LinkError(f"a name {back} back of {len(names)}")
        return names[-back]

    def _spell(self, rc: RangeDecoder) -> str:
        n = rc.number(self._state.length)
        if not 0 <= n <= MAX_TEXT * 4:
            raise LinkError(f"a name of {n} bytes")
        data = bytearray()
        prev = 0
        for _ in range(n):
            prev = rc.symbol(self._state.char_model(prev), 8)
            data.append(prev)
            if rc.overrun > MAX_OVERRUN:
                raise LinkError("a sample frame that ends inside a name")
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise LinkError(f"a name that is not UTF-8: {bytes(data[:40])!r}") from None

    def _sample(self, rc: RangeDecoder, probe: _Probe) -> bytes:
        late = self._late + rc.number(probe.time)
        dt = probe.dt_ms + late
        interval_ms = dt + rc.number(probe.gap)
        t_ms = probe.t_ms + dt
        probe.t_ms, probe.dt_ms, self._late = t_ms, dt, late
        fields = probe.fields()
        tokens: list[Token] = []
        for i, s in enumerate(fields):
            kind = rc.symbol(s.kind, 3)
            if kind == SAME:
                if s.last is None:
                    raise LinkError(f"{probe.keys[i] if i < len(probe.keys) else 'extra'}: "
                                    "unchanged, but never sent")  # fmt: skip
                tokens.append(s.last)
                continue
            if kind == COUNT:
                n = s.last_n + rc.number(s.count)
                tok = _rate(n, interval_ms, probe.whole[i]) if i < len(probe.keys) else None
                if tok is None or abs(n) >= MAX_COUNT:
                    raise LinkError(f"a count of {n} in {interval_ms} ms")
                tokens.append(tok)
                continue
            if kind == RECENT:
                at = rc.symbol(s.which_recent, 2)
                if at >= len(s.recent):
                    raise LinkError(f"recent value {at} of {len(s.recent)}")
                tokens.append(s.recent[at])
                continue
            whole = probe.whole[i] if i < len(probe.keys) else False
            anchor = _anchor(fields, tokens, i, kind, whole) if kind in (DECIMAL, INT) else None
            exp = 0
            if kind == DECIMAL:
                exp = anchor[0] if anchor is not None else 0
                if not rc.bit(s.same_exp, 0):
                    exp += rc.number(s.exp)
                    if abs(exp) > _EXP_BOUND:
                        raise LinkError(f"a decimal exponent of {exp}")
            m = 0
            if kind in (DECIMAL, INT):
                guess = _guess(anchor, exp)
                m = rc.number(s.fresh) if guess is None else guess + rc.number(s.diff)
            elif i >= len(probe.keys):
                raise LinkError("extra carries numbers only")
            if kind == DECIMAL and _boundary(m):
                side = rc.symbol(s.side, 2)
                if side >= len(_SIDES):
                    raise LinkError(f"a boundary side of {side}")
                kind = _SIDES[side]
            tokens.append((kind, m, exp))
        _relink(fields, tokens)
        n = len(probe.keys)
        _counts(fields[:n], tokens, interval_ms)
        _learn(fields, tokens, probe)
        line: dict[str, Any] = {
            "type": "sample",
            "probe": probe.name,
            "t": t_ms / 1000,
            "interval": interval_ms / 1000,
            "values": {k: _value(tok) for k, tok in zip(probe.keys, tokens[:n], strict=True)},
        }
        extra = _fill(probe.shape, tokens[n:], [0])
        if extra:
            line["extra"] = extra
        try:
            return json.dumps(line, **_DUMP).encode()
        except ValueError as exc:  # a value out of range (1e999 from a corrupt exponent)
            raise LinkError(f"a sample that is not valid JSON: {exc}") from None
