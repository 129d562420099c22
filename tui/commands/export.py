"""`probetop export REC -O openmetrics|csv|json [--out FILE]`: a recording as
the metrics a live ``--metrics`` endpoint serves, with their timestamps
(docs/metrics.md). The work is in ``tui/metrics/export.py``."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from probetop.probes.core.options import CommandSpec, Option, user_path
from probetop.probes.record import RecordingError, replace_file
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.metrics.export import FORMATS, ExportError, export

SPEC = CommandSpec(
    name="export",
    help="a recording as metrics: OpenMetrics (for promtool backfill), CSV or JSON",
    description="""\
Turn a recording made with --record into the metrics the live --metrics
endpoint serves, with the recording's timestamps:

  openmetrics  text for `promtool tsdb create-blocks-from openmetrics FILE DIR`
               (backfill a past session into Prometheus)
  csv          one column per series, one row per sampling interval
  json         one JSON document

The recording is streamed, so an hour-long one is not held in memory.
""",
    epilog="""\
examples:
  probetop export s.jsonl -O openmetrics --out s.om
  promtool tsdb create-blocks-from openmetrics s.om ./data
  probetop export s.jsonl -O csv --out s.csv
""",
    options=(
        Option(("file",), "a recording (JSON Lines) made with --record", metavar="REC"),
        Option(
            ("-O", "--format"),
            "output format (default openmetrics; --json is -O json)",
            choices=FORMATS,
            default=None,
            metavar="FORMAT",
        ),
        Option(
            ("--out",),
            "write to FILE (mode 0600, replaced whole at the end) instead of stdout (-)",
            metavar="FILE",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class ExportSettings:
    file: Path
    format: str = "openmetrics"
    out: Path | None = None


def settings(values: Mapping[str, Any], common: CommonOptions) -> ExportSettings:
    out = values.get("out")
    if out == "":  # was stdout, silently
        raise ExportError("--out: an empty file name (leave --out out, or give -, for stdout)")
    fmt = values.get("format")
    if common.json:  # was ignored: OpenMetrics came out of `export REC --json`
        if fmt not in (None, "json"):
            raise ExportError(f"--json asks for -O json; give one of --json and -O {fmt}")
        fmt = "json"
    return ExportSettings(
        file=user_path(values["file"]),
        format=fmt or "openmetrics",
        out=user_path(out) if out not in (None, "-") else None,  # "-": stdout
    )


def run(plan: RunPlan[ExportSettings]) -> int:
    s = plan.settings  # --metrics/--textfile: refused by cli.refuse_ignored (no live probes)
    with _output(s.file, s.out) as out:
        result = export(s.file, s.format, out)
    for warning in result.warnings:
        print(f"probetop: warning: {warning}", file=sys.stderr)
    if result.series == 0:  # an empty file and exit 0 said nothing about why
        print(
            f"probetop: warning: {s.file} holds no metric to export (the passive "
            "system.* panes are not exported: node_exporter exports them; `probetop "
            f"report {s.file}` summarises them)",
            file=sys.stderr,
        )
    if s.out is not None:
        print(
            f"probetop: wrote {s.out}: {result.series} series, {result.points} "
            f"{'rows' if s.format == 'csv' else 'points'} from {result.samples} samples",
            file=sys.stderr,
        )
    return 0


@contextlib.contextmanager
def _output(recording: Path, out: Path | None) -> Iterator[TextIO]:
    """stdout, or a temporary file beside ``out`` renamed over it at the end
    (a failed export leaves no half file); never the recording itself."""
    if out is None:
        yield sys.stdout
        return
    if _same_file(recording, out):
        raise ExportError(f"--out {out} is the recording itself; choose another file")
    if out.is_dir():
        raise ExportError(f"--out {out} is a directory; give a file name")
    # The one way every file probetop writes at a user's word is written: a
    # device, FIFO or kernel file is refused, never replaced by ours; the old
    # file stays whole until the new one is complete.
    try:
        with replace_file(out, verb="write") as f:
            yield f
    except RecordingError as exc:
        raise ExportError(f"--out: {exc}") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()
