"""A recording as metrics: OpenMetrics text, CSV or one JSON document.

Contract:
- The recording is streamed (``probes.record.stream_session``): one line in
  memory at a time, the metric state (a few numbers per series) and, for
  OpenMetrics, each series' lines spooled to one temporary file (a series'
  points must be contiguous in OpenMetrics; ``_Spool`` keeps a few KiB per
  series in memory).
- The metrics are the live endpoint's (``MetricsState``, the same trackers),
  each series taking a point when its probe's sample arrives, stamped with
  the header's ``started_at`` plus the sample's ``t``: a series' timestamps
  only grow, counters never go back.
- ``openmetrics``: accepted whole by prometheus_client's OpenMetrics parser
  (every sample kept) and by ``promtool tsdb create-blocks-from
  openmetrics`` (timestamps in seconds, ``# EOF`` at the end). Histograms
  and summaries are written as their component series (``_component``: why).
  The build info takes a point at least once per sampling interval.
  ``csv``: a ``timestamp`` and a ``t_s`` column, then one column per series
  (gauges, counters, histogram and summary ``_count``/``_sum``, summary
  quantiles; histogram buckets and info metrics are left out), one row per
  sampling step holding each series' latest value as of that step (what a
  Prometheus range query with that step returns); two passes over the file.
  ``json``: one document, every sample's series in file order, then the
  metric descriptions and ``series_ended``: every ``series_end`` line of the
  recording (a device or interface gone), whichever probe it belongs to.
- A series that ended takes no more points: the passive ``system.*`` probes,
  the only ones whose devices come and go, export no metrics (node_exporter
  covers the machine), so their ends show in the JSON document alone.
- Errors: ``RecordingError`` (the recording, named by line) and
  ``ExportError`` (the output), both exit 2.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TextIO

from probetop.probes import __version__
from probetop.probes.core.base import ProbeError
from probetop.probes.core.metricdefs import Histogram, MetricDef, Point, Summary
from probetop.probes.core.sample import Sample, SeriesEnded
from probetop.probes.record import SessionStream, stream_session
from probetop.tui.metrics.families import openmetrics_text, series_samples
from probetop.tui.metrics.state import MetricsState

FORMATS = ("openmetrics", "csv", "json")


class ExportError(ProbeError):
    """The export cannot be written (exit 2)."""

    code = "export"


@dataclass
class ExportResult:
    """What an export wrote: samples read, series and points written, warnings."""

    samples: int = 0
    series: int = 0
    points: int = 0
    warnings: list[str] = field(default_factory=list)


def start_time(stream: SessionStream) -> float | None:
    """The session's start, Unix seconds, from the header (None if absent)."""
    text = stream.header.get("started_at")
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


def _state(stream: SessionStream) -> MetricsState:
    version = stream.header.get("probetop")
    return MetricsState(version if isinstance(version, str) else "unknown")


def _unexported(stream: SessionStream, state: MetricsState) -> list[str]:
    """A warning per probe whose kind has no metrics in this probetop: an
    export that leaves a probe out says so instead of looking complete."""
    return [
        f"{stream.path}: probe {probe} is of kind {kind!r}, which has no metrics in "
        f"probetop {__version__}: not exported (a newer probetop exports it)"
        for probe, kind in state.unexported.items()
    ]


def _samples(
    stream: SessionStream, state: MetricsState, ends: list[SeriesEnded] | None = None
) -> Iterator[tuple[float, Sample]]:
    """Feed every record to ``state``; yield (t, sample) for the samples it
    took. The ended series go to ``ends`` when given."""
    for t, record in stream.records():
        if state.feed(record) and isinstance(record, Sample):
            yield t, record
        elif ends is not None and isinstance(record, SeriesEnded):
            ends.append(record)


def export(path: Path, fmt: str, out: TextIO) -> ExportResult:
    """Write ``path`` as ``fmt`` to ``out``. See the module docstring."""
    if fmt == "openmetrics":
        return _openmetrics(path, out)
    if fmt == "csv":
        return _csv(path, out)
    if fmt == "json":
        return _json(path, out)
    raise ExportError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


# -- OpenMetrics -----------------------------------------------------------------


SeriesKey = tuple[str, tuple[tuple[str, str], ...]]
"""One exported series: its sample name and labels."""
_COMPOSITE = ("histogram", "summary")


class _Lines:
    """OpenMetrics sample lines. Each series' name and labels are formatted
    once by prometheus_client's OpenMetrics exposition (its escaping, its
    order) and kept; a point adds the value (prometheus_client's float
    spelling) and the timestamp. Formatting every point through the
    exposition spent 6 ms a sample escaping the same labels again."""

    def __init__(self) -> None:
        self.prefixes: dict[SeriesKey, str] = {}

    def of(self, point: Point, timestamp: float) -> list[tuple[SeriesKey, str]]:
        from prometheus_client.utils import floatToGoString

        composite = point.metric.type in _COMPOSITE
        out = []
        for name, labels, value in series_samples(point):
            key = (name, tuple(labels.items()))
            prefix = self.prefixes.get(key)
            if prefix is None:
                metric = _component(point.metric, name) if composite else point.metric
                prefix = self.prefixes[key] = _prefix(metric, name, labels)
            out.append((key, f"{prefix} {floatToGoString(value)} {timestamp}\n"))
        return out


def _prefix(metric: MetricDef, name: str, labels: dict[str, str]) -> str:
    """``name{labels}`` of one sample line, as the exposition writes it."""
    family = _empty_family(metric)[0]
    family.add_sample(name, labels, 0.0)
    (line,) = [ln for ln in openmetrics_text([family]).splitlines() if not ln.startswith("#")]
    return line.rsplit(" ", 1)[0]


def _component(metric: MetricDef, sample_name: str) -> MetricDef:
    """The family of one component of a histogram or summary, as the export
    writes it: its own name (``X_bucket``, ``X_count``, ``X_sum``, ``X`` for a
    summary's quantiles), type unknown, no unit (the name does not end in it).

    Why: a histogram with several timestamped points is valid OpenMetrics,
    but prometheus_client's parser (0.26, the reference parser) keeps only the
    first sample of each later point (its duplicate guard keys on the series
    and the previous sample's timestamp, not on the point) and then refuses
    the family ("+Inf bucket missing"). Written as components, every sample
    parses, and a TSDB stores exactly the same series (``promtool tsdb
    create-blocks-from openmetrics`` keys series by name and labels; it keeps
    no type)."""
    part = sample_name[len(metric.name) :] or " quantiles"
    help_ = f"{metric.help} (the{part.replace('_', ' ', 1)} series of {metric.type} {metric.name})"
    return MetricDef(sample_name, "unknown", "", help_, metric.labels)


class _Spool:
    """The lines of many series, each kept in order, in one temporary file.

    OpenMetrics wants each series' points contiguous; a recording gives them
    interleaved (one sample line per probe per interval). Lines are buffered
    per series and written to the file in chunks of ``CHUNK`` bytes, so a
    long recording with hundreds of series (a histogram's every bucket)
    holds a few KiB per series in memory and one file descriptor."""

    CHUNK = 16 << 10

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self._end = 0
        self._chunks: dict[SeriesKey, list[tuple[int, int]]] = {}
        self._pending: dict[SeriesKey, list[bytes]] = {}
        self._sizes: dict[SeriesKey, int] = {}

    def add(self, key: SeriesKey, line: str) -> None:
        data = line.encode("utf-8")
        pending = self._pending.setdefault(key, [])
        pending.append(data)
        size = self._sizes[key] = self._sizes.get(key, 0) + len(data)
        if size >= self.CHUNK:
            self._flush(key)

    def _flush(self, key: SeriesKey) -> None:
        data = b"".join(self._pending.pop(key, []))
        self._sizes[key] = 0
        if data:
            self._file.seek(self._end)
            self._file.write(data)
            self._chunks.setdefault(key, []).append((self._end, len(data)))
            self._end += len(data)

    def write_series(self, key: SeriesKey, out: TextIO) -> None:
        """Every line of ``key``, in the order added."""
        for offset, size in self._chunks.get(key, []):
            self._file.seek(offset)
            out.write(self._file.read(size).decode("utf-8"))
        out.write(b"".join(self._pending.get(key, [])).decode("utf-8"))

    def close(self) -> None:
        self._file.close()


def _openmetrics(path: Path, out: TextIO) -> ExportResult:
    result = ExportResult()
    spool = _Spool()
    lines = _Lines()
    last: dict[tuple[str, tuple[str, ...]], float] = {}
    last_build = -math.inf
    headers: dict[str, str] = {}  # family name -> its HELP/TYPE/UNIT lines
    series_of: dict[str, dict[SeriesKey, None]] = {}  # family name -> its series, in order
    try:
        with stream_session(path) as stream:
            t0 = start_time(stream)
            if t0 is None:
                raise ExportError(
                    f"{path}: the header has no started_at time: OpenMetrics needs real "
                    "timestamps (export it as csv or json)"
                )
            state = _state(stream)
            for t, sample in _samples(stream, state):
                result.samples += 1
                ts = round(t0 + t, 3)
                points = state.probe_points(sample.probe)
                # The build info once an interval, not once per probe: at most
                # one point per half interval (a whole one, compared with
                # timestamps rounded to the millisecond, dropped a point of
                # samples 0.999 s apart at --interval 1).
                if ts - last_build >= min(sample.interval_s, 1.0) / 2:
                    points.insert(0, state.build_point())
                    last_build = ts
                for point in points:
                    if last.get(point.key, -math.inf) >= ts:
                        continue  # a series' timestamps must grow
                    last[point.key] = ts
                    for key, line in lines.of(point, ts):
                        family = key[0] if point.metric.type in _COMPOSITE else point.metric.name
                        if family not in headers:
                            metric = point.metric
                            if metric.type in _COMPOSITE:
                                metric = _component(metric, key[0])
                            headers[family] = _family_header(metric)
                        series_of.setdefault(family, {})[key] = None
                        spool.add(key, line)
                    result.points += 1
            result.warnings.extend(stream.warnings)
            result.warnings.extend(_unexported(stream, state))
        for family, keys in series_of.items():
            out.write(headers[family])
            for key in keys:
                spool.write_series(key, out)
        out.write("# EOF\n")
        result.series = len(last)
    finally:
        spool.close()
    return result


def _family_header(metric: MetricDef) -> str:
    """HELP / TYPE / UNIT of one family, as prometheus_client writes them."""
    text = openmetrics_text(_empty_family(metric))
    return "".join(ln for ln in text.splitlines(keepends=True) if ln != "# EOF\n")


def _empty_family(metric: MetricDef) -> list[Any]:
    from prometheus_client.metrics_core import Metric

    return [Metric(metric.name, metric.help, metric.type, metric.unit)]


# -- CSV -------------------------------------------------------------------------


def _series_name(name: str, labels: dict[str, str]) -> str:
    """``name{a="x",b="y"}``: the series as PromQL writes it."""
    if not labels:
        return name
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return f"{name}{{{inner}}}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _columns(point: Point) -> Iterator[tuple[str, float]]:
    """The CSV cells of one series: (column, value); no buckets, no info."""
    if point.metric.type in ("info",):
        return
    for name, labels, value in series_samples(point):
        if name.endswith("_bucket") and "le" in labels:
            continue
        yield _series_name(name, labels), value


def _csv(path: Path, out: TextIO) -> ExportResult:
    result = ExportResult()
    columns: dict[str, int] = {}
    intervals: list[float] = []
    with stream_session(path) as stream:  # pass 1: the columns and the step
        state = _state(stream)
        for _t, sample in _samples(stream, state):
            if len(intervals) < 10_000 and sample.interval_s > 0:
                intervals.append(sample.interval_s)
            for point in state.probe_points(sample.probe):
                for column, _value in _columns(point):
                    columns.setdefault(column, len(columns))
    # The sampling interval asked for (a sample's own length is a little off it).
    step = max(0.001, round(statistics.median(intervals), 3)) if intervals else 1.0
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["timestamp", "t_s", *columns])
    current: list[float | None] = [None] * len(columns)
    with stream_session(path) as stream:  # pass 2: the rows
        t0 = start_time(stream)
        state = _state(stream)
        row = 1  # the next row to write: step `row` holds samples up to (row + 0.5) * step

        def flush_until(t: float) -> None:
            nonlocal row
            while (row + 0.5) * step < t:
                stamp = row * step
                writer.writerow(
                    [
                        _fmt(round(t0 + stamp, 3)) if t0 is not None else "",
                        _fmt(round(stamp, 6)),
                        *("" if v is None else _fmt(v) for v in current),
                    ]
                )
                result.points += 1
                row += 1

        for t, sample in _samples(stream, state):
            flush_until(t)
            result.samples += 1
            for point in state.probe_points(sample.probe):
                for column, value in _columns(point):
                    index = columns.get(column)
                    if index is not None:
                        current[index] = value
        if result.samples:
            flush_until((row + 0.5) * step + step * 0.5)
        result.warnings.extend(stream.warnings)
        result.warnings.extend(_unexported(stream, state))
    result.series = len(columns)
    return result


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(round(value, 9))


# -- JSON ------------------------------------------------------------------------


def _json_value(point: Point) -> dict[str, Any]:
    value = point.value
    labels = dict(zip(point.metric.labels, point.labels, strict=False))
    doc: dict[str, Any] = {"metric": point.metric.exposed_name, "labels": labels}
    if isinstance(value, Histogram):
        doc["histogram"] = {
            "buckets": [[le, n] for le, n in value.buckets],
            "count": value.count,
            "sum": value.sum,
        }
    elif isinstance(value, Summary):
        doc["summary"] = {
            "quantiles": [[q, v] for q, v in value.quantiles],
            "count": value.count,
            "sum": value.sum,
        }
    elif isinstance(value, dict):
        doc["info"] = dict(value)
    else:
        doc["value"] = value
    return doc


def _json(path: Path, out: TextIO) -> ExportResult:
    result = ExportResult()
    defs: dict[str, MetricDef] = {}
    with stream_session(path) as stream:
        t0 = start_time(stream)
        state = _state(stream)
        head = {
            "format": "probetop-metrics",
            "version": 1,
            "source": str(path),
            "probetop": stream.header.get("probetop"),
            "started_at": stream.header.get("started_at"),
        }
        out.write(json.dumps(head)[:-1] + ', "samples": [')
        first = True
        keys: set[tuple[str, tuple[str, ...]]] = set()
        ends: list[SeriesEnded] = []
        for t, sample in _samples(stream, state, ends):
            result.samples += 1
            points = state.probe_points(sample.probe)
            for point in points:
                defs.setdefault(point.metric.exposed_name, point.metric)
                keys.add(point.key)
            doc = {
                "probe": sample.probe,
                "t_s": t,
                "timestamp": round(t0 + t, 3) if t0 is not None else None,
                "series": [_json_value(p) for p in points],
            }
            out.write(("\n  " if first else ",\n  ") + json.dumps(doc, allow_nan=False))
            first = False
            result.points += len(points)
        result.warnings.extend(stream.warnings)
        result.warnings.extend(_unexported(stream, state))
    metrics = [
        {
            "name": name,
            "type": m.type,
            "unit": m.unit,
            "help": m.help,
            "labels": list(m.labels),
        }
        for name, m in defs.items()
    ]
    ended = [
        {
            "probe": e.probe,
            "entity": e.entity,
            "t_s": round(e.t_ns / 1e9, 6),
            "last_t_s": round(e.last_ns / 1e9, 6),
            "timestamp": round(t0 + e.t_ns / 1e9, 3) if t0 is not None else None,
            "reason": e.reason,
            "summaries": {name: s.as_dict() for name, s in e.summaries.items()},
        }
        for e in ends
    ]
    tail = {"metrics": metrics, "series_ended": ended, "warnings": result.warnings}
    out.write("\n], " + json.dumps(tail, allow_nan=False)[1:] + "\n")
    result.series = len(keys)
    return result
