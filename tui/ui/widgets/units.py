"""Human labels and units for metric names: ``read_clat_p99_us`` -> ``p99 read latency``.

Pure text, no Textual. Panes without hand-written labels (the generic pane,
the system panes, the maximised chart) label rows with ``human_label`` and
scale byte rates with ``scale_for`` so that a row reads "9.20 MB/s", never
"9200000 read_Bps".

Contract:
- ``human_label(name, unit)`` never returns an empty string; words come from
  the metric name (``_``-separated tokens), known abbreviations are spelled
  out (``clat`` -> latency, ``iops`` -> IO/s, ``Bps`` -> B/s), a percentile
  token (``p99``) moves to the front, and a token that only repeats the unit
  (``_us``, ``_ms``, ``_pct``) is dropped. The unit is not appended: callers
  show it in its own column or after the value (``with_unit``).
- ``scale_for(values, unit)`` picks one SI prefix for a group of byte
  values (a table row, an axis) so they read in one unit: ``(1e6, "MB/s")``;
  times get the unit that fits the group's largest (``time_scale``:
  ``(0.001, "µs")`` for a few hundred ns given in ms, which read "0.00 ms").
- ``fmt_with_unit(value, unit)`` is the one way a pane writes a single
  number with its unit: bytes take their SI prefix on the unit and a space
  before it ("12.0 MB", "8.04 MB/s", "512 B"), as ``scale_for`` scales a
  table row; other units follow ``with_unit`` ("2841 IO/s", "3/s").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from probetop.tui.analysis.timescale import time_scale
from probetop.tui.ui.widgets.history import fmt_value
from rich.cells import cell_len, set_cell_size

# Tokens spelled out in labels.
_WORDS = {
    "clat": "latency",
    "lat": "latency",
    "rtt": "RTT",
    "ttfb": "TTFB",
    "bw": "bandwidth",
    "eps": "events/s",
    "iops": "IO/s",
    "pps": "pkt/s",
    "bps": "B/s",
    "mhz": "MHz",
    "eta": "ETA",
    "tls": "TLS",
    "tcp": "TCP",
    "dns": "DNS",
    "http": "HTTP",
    "errors": "errors",
    "drops": "drops",
    "avg": "avg",
    "mdev": "mdev",
}
# Tokens that only repeat the unit: dropped from the words.
_UNIT_TOKENS = {"us": ("µs", "us"), "ms": ("ms",), "s": ("s",), "pct": ("%",)}
_PERCENTILE = re.compile(r"^p\d+(\.\d+)?$")
_LOAD = re.compile(r"^load(\d+)$")

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def human_label(name: str, unit: str = "") -> str:
    """A short human label for a metric name. See the module docstring."""
    load = _LOAD.match(name)
    if load:
        return f"load avg {load.group(1)} min"
    tokens = [t for t in name.split("_") if t]
    words: list[str] = []
    front: list[str] = []
    for i, token in enumerate(tokens):
        low = token.lower()
        if low in _UNIT_TOKENS and unit in _UNIT_TOKENS[low] and i == len(tokens) - 1:
            continue  # "read_lat_ms" in ms: the unit is shown beside the value
        if low == "pct":
            words.append("%" if unit == "%" else "percentile")
        elif _PERCENTILE.match(low):
            front.append(low)
        elif low == "per" and i + 1 < len(tokens):
            words.append("/")
        else:
            words.append(_WORDS.get(low, token))
    if len(words) > 1:  # "read IO/s" in IO/s: the unit is shown beside the value
        words = [w for w in words if w != unit and w != "%"] or words
    text = " ".join(front + words).replace(" / ", "/").replace("/ ", "/")
    return text or name or "?"


def label_with_unit(name: str, unit: str = "") -> str:
    """``human_label`` followed by the unit, for a chart legend or a row
    without a unit column: ``read IO/s``, ``busy %``, ``rx errors/s``."""
    label = human_label(name, unit)
    if not unit or label.endswith(unit):
        return label
    return label + unit if unit.startswith("/") else f"{label} {unit}"


def scale_for(values: Iterable[float | None], unit: str) -> tuple[float, str]:
    """One SI factor for a group of values: ``(factor, prefixed unit)``.

    Byte units (``B``, ``B/s``) get k/M/G/T from the largest magnitude in
    the group; times (ns, µs, ms, s) the unit ``time_scale`` picks for the
    largest; other units stay as they are (their numbers carry a k/M
    suffix from ``fmt_value`` when large: "36.6k IO/s")."""
    top = max((abs(v) for v in values if v is not None and math.isfinite(v)), default=0.0)
    if not unit.startswith("B"):
        return time_scale(top, unit)
    for factor, prefix in _SI:
        if top >= factor:
            return factor, prefix + unit
    return 1.0, unit


def with_unit(text: str, unit: str) -> str:
    """``"9.20"`` + ``"MB/s"`` -> ``"9.20 MB/s"``; a ``/s`` unit attaches: ``"3/s"``."""
    if not unit:
        return text
    if unit.startswith("/"):
        return text + unit
    return f"{text} {unit}"


def fmt_with_unit(value: float | None, unit: str, width: int = 0) -> str:
    """``value`` and its unit as one text (right-aligned in ``width``); see
    the module docstring. A byte size or rate is never written with its
    prefix on the number ("12.0M" + "B"): that read "12.0MB" in one pane
    and "12.0 MB" in the next."""
    factor, shown = scale_for([value], unit)
    number = fmt_value(None if value is None else value / factor, shown)
    text = with_unit(number, shown)
    return text.rjust(width) if width else text


def unit_family(unit: str) -> str:
    """Units that share a chart axis: every count per second is one family
    (``pkt/s``, ``/s``, ``IO/s``, ``events/s``); bytes per second, times and
    percentages each their own."""
    if unit.endswith("/s") and not unit.endswith("B/s"):
        return "/s"
    if unit in ("us", "µs"):
        return "µs"
    return unit


# Units recognised at the end of a chart label ("loss %", "rtt p99 µs").
_LABEL_UNITS = (
    ("B/s", "B/s"),
    ("pkt/s", "pkt/s"),
    ("IO/s", "IO/s"),
    ("pps", "pkt/s"),
    ("/s", "/s"),
    ("µs", "µs"),
    ("us", "µs"),
    ("ms", "ms"),
    ("%", "%"),
    ("MHz", "MHz"),
)


_COUNT_RATE = re.compile(r"^[A-Za-z]+/s$")
_BINARY_RATE = re.compile(r"^[KMGT]iB/s$")


def unit_in_label(label: str) -> str:
    """The unit a free-text chart label names (``"loss %"`` -> ``"%"``,
    ``"probe pps"`` -> ``"pkt/s"``, ``"MiB/s"`` itself: a binary-prefixed
    rate is already scaled), or ``""`` when it names none."""
    for word in reversed(label.replace("(", " ").replace(")", " ").split()):
        if _BINARY_RATE.match(word):
            return word  # "MiB/s": values in 2^20 B/s; "B/s" would scale them as bytes
        if _COUNT_RATE.match(word) and not word.endswith("B/s"):
            return word  # "events/s", "req/s": the chart's axis says what is counted
        for suffix, unit in _LABEL_UNITS:
            if word == suffix or (suffix.startswith("/") and word.endswith(suffix)):
                return unit
            if suffix == "B/s" and word.endswith("B/s"):
                return unit
    return ""


def fit_fields(text: str, width: int) -> str:
    """``text`` cut to ``width`` at a double-space field boundary when it can
    be (a figure is shown whole or not at all)."""
    if cell_len(text) <= width:
        return text
    fields = text.split("  ")
    while len(fields) > 2 and cell_len("  ".join(fields)) > width:
        fields.pop()
    return set_cell_size("  ".join(fields), width).rstrip()
