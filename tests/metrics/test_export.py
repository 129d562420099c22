"""`probetop export`: recordings (the demo's, and probetop 0.1's per family)
to OpenMetrics, CSV and JSON. The OpenMetrics text is parsed with
prometheus_client's parser and loaded with promtool when it is installed;
its counters are checked never to go back; its final values are checked
against the recording's own footer (the probes' summaries)."""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import shutil
import stat
import subprocess
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from forkserver import PRELOAD, run_probetop
from metrics_fixtures import PROBETOP, assert_never_backwards, parse

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "data" / "demo_session.jsonl"
OLD_RECORDINGS = [
    REPO / "tests" / "data" / "tui_session.jsonl",
    REPO / "tests" / "disk" / "data" / "iops-session-0.1.jsonl",
    REPO / "tests" / "disk" / "data" / "warmup-session-0.1.jsonl",
    REPO / "tests" / "icmp" / "data" / "icmp_session_0_1.jsonl",
]


EXPORT_PRELOAD = (*PRELOAD, "probetop.tui.metrics.export")


def export(*argv: str, fork: bool = True) -> subprocess.CompletedProcess[str]:
    """``probetop export ARGV``. ``fork``: forked from an interpreter that
    has imported the CLI and the exporter (tests/forkserver.py: a process of
    its own with this argv, stdio and exit status; ~0.5 CPU-s of imports
    spared a run); a whole `python -m` otherwise."""
    if fork:
        return run_probetop(["export", *argv], timeout=120, preload=EXPORT_PRELOAD)
    return subprocess.run([*PROBETOP, "export", *argv], capture_output=True, text=True, timeout=120)


def footer(path: Path) -> dict[str, Any]:
    last = path.read_text().splitlines()[-1]
    return json.loads(last)["summaries"]


@pytest.fixture(scope="module")
def demo_openmetrics() -> str:
    result = export(str(DEMO), "-O", "openmetrics", fork=False)  # one whole start
    assert result.returncode == 0, result.stderr
    return result.stdout


def by_timestamp(families: dict[str, Any]) -> list[dict[str, Any]]:
    """The parsed families, one dict per timestamp (what a scrape at that
    moment would have shown), for ``assert_never_backwards``."""
    from prometheus_client.metrics_core import Metric

    moments: dict[float, dict[str, Any]] = defaultdict(dict)
    for name, family in families.items():
        kind = family.type
        if kind == "unknown" and name.endswith(("_bucket", "_count", "_sum")):
            kind = "histogram"  # a component series: cumulative, checked as such
        for sample in family.samples:
            at = float(sample.timestamp)
            if name not in moments[at]:
                moments[at][name] = Metric(family.name, family.documentation, kind)
            moments[at][name].samples.append(sample)
    return [moments[t] for t in sorted(moments)]


def test_openmetrics_parses_whole_and_counters_grow(demo_openmetrics: str) -> None:
    """The official parser takes the whole file and keeps every sample. It
    refused it ("+Inf bucket missing": it keeps only the first sample of a
    histogram's later points): histograms are written as their component
    series, which a TSDB stores the same way."""
    text = demo_openmetrics
    assert text.endswith("# EOF\n")
    families = parse(text, openmetrics=True)
    sample_lines = sum(1 for ln in text.splitlines() if not ln.startswith("#"))
    assert sum(len(f.samples) for f in families.values()) == sample_lines
    moments = by_timestamp(families)
    assert len(moments) >= 16
    assert assert_never_backwards(moments) > 100

    expected = {
        "probe_success": ("gauge", ""),
        "probe_duration_seconds": ("gauge", "seconds"),
        "probe_http_duration_seconds": ("gauge", "seconds"),
        "probe_http_status_code": ("gauge", ""),
        "probe_icmp_duration_seconds": ("gauge", "seconds"),
        "smokeping_requests": ("counter", ""),
        "smokeping_response_duration_seconds_bucket": ("unknown", ""),
        "smokeping_response_duration_seconds_count": ("unknown", ""),
        "smokeping_response_duration_seconds_sum": ("unknown", ""),
        "probetop_cpu_events": ("counter", ""),
        "probetop_cpu_event_latency_quantile_seconds": ("unknown", ""),
        "probetop_cpu": ("info", ""),
        "probetop_iops_ios": ("counter", ""),
        "probetop_iops_bytes": ("counter", "bytes"),
        "probetop_iops_completion_latency_quantile_seconds": ("unknown", ""),
        "probetop_warmup_bytes": ("counter", "bytes"),
        "probetop_warmup_progress_ratio": ("gauge", "ratio"),
        "probetop_build": ("info", ""),
    }
    for name, (type_, unit) in expected.items():
        assert name in families, name
        assert (families[name].type, families[name].unit) == (type_, unit), name
    # the passive system probes are node_exporter's job: no metrics from them
    assert not any(
        "system" in s.labels.get("probe", "") for f in families.values() for s in f.samples
    )


def _last(text: str, sample: str, **labels: str) -> float:
    """The last value of one series in OpenMetrics text."""
    found = None
    for line in text.splitlines():
        if line.startswith(sample + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            found = float(line.split("} ")[1].split()[0])
    assert found is not None, f"{sample}{labels} not in the export"
    return found


def test_openmetrics_final_values_match_the_footer(demo_openmetrics: str) -> None:
    summaries = footer(DEMO)
    text = demo_openmetrics
    assert _last(text, "probetop_cpu_events_total") == summaries["cpu"]["total_events"]
    icmp = summaries["icmp:127.0.0.1"]
    assert _last(text, "smokeping_requests_total") == icmp["sent"]
    assert _last(text, "smokeping_response_duration_seconds_count") == icmp["received"]
    http = next(v for k, v in summaries.items() if k.startswith("http:"))
    for label, doc in http["urls"].items():
        assert _last(text, "probetop_http_requests_total", url=doc["url"]) == doc["requests"], label
    # The disk probes' summaries also count I/O after their last sample (the
    # stop's partial interval): the counters may trail them by under an interval.
    iops = next(v for k, v in summaries.items() if k.startswith("iops:"))
    ios = _last(text, "probetop_iops_ios_total", direction="read")
    assert 0.9 * iops["read"]["total_ios"] <= ios <= iops["read"]["total_ios"]


def test_promtool_backfills_the_export(demo_openmetrics: str, tmp_path: Path) -> None:
    # Not `from conftest import require_tool`: with tests/analysis collected
    # too, "conftest" names that package's module, not tests/conftest.py.
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus provides it)")
    source = tmp_path / "demo.om"
    source.write_text(demo_openmetrics)
    result = subprocess.run(
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(source),
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [ln.split() for ln in result.stdout.splitlines() if ln and not ln.startswith("BLOCK")]
    assert lines, result.stdout
    header = result.stdout.splitlines()[0].split()
    samples_col = header.index("NUM") if "NUM" in header else None
    assert samples_col is not None
    # "BLOCK ULID  MIN TIME  MAX TIME  DURATION  NUM SAMPLES ..." : the sample count is column 5
    total = sum(int(row[4]) for row in lines)
    sample_lines = sum(1 for ln in demo_openmetrics.splitlines() if not ln.startswith("#"))
    assert total == sample_lines


def test_csv_one_column_per_series_one_row_per_interval(tmp_path: Path) -> None:
    out = tmp_path / "demo.csv"
    result = export(str(DEMO), "-O", "csv", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    rows = list(csv.DictReader(out.open()))
    assert 15 <= len(rows) <= 17  # a 16 s recording sampled each second
    columns = list(rows[0])
    assert columns[:2] == ["timestamp", "t_s"]
    assert len(columns) == len(set(columns))
    assert not any("_bucket" in c or c.endswith("_info") for c in columns)
    steps = [float(r["t_s"]) for r in rows]
    assert all(b - a == pytest.approx(1.0) for a, b in itertools.pairwise(steps))
    counters = [c for c in columns if "_total{" in c or "_count{" in c or "_sum{" in c]
    assert len(counters) > 10
    for column in counters:
        values = [float(r[column]) for r in rows if r[column]]
        assert values == sorted(values), column
    events = next(c for c in columns if c.startswith("probetop_cpu_events_total{"))
    assert float(rows[-1][events]) == footer(DEMO)["cpu"]["total_events"]
    stamps = [float(r["timestamp"]) for r in rows]
    assert stamps[0] > 1.7e9 and stamps == sorted(stamps)


def test_json_is_one_document(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    result = export(str(DEMO), "-O", "json", "--out", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "probetop-metrics"
    kinds = {json.loads(ln).get("probe") for ln in DEMO.read_text().splitlines()[1:-1]}
    exported = {s["probe"] for s in doc["samples"]}
    assert exported == {k for k in kinds if k and not k.startswith("system.")}
    names = {m["name"]: m for m in doc["metrics"]}
    assert names["smokeping_response_duration_seconds"]["type"] == "histogram"
    hist = next(
        s["histogram"]
        for sample in doc["samples"]
        for s in sample["series"]
        if s["metric"] == "smokeping_response_duration_seconds"
    )
    assert hist["buckets"][-1][1] <= hist["count"]
    assert all(math.isfinite(s["t_s"]) for s in doc["samples"])


@pytest.mark.parametrize("recording", OLD_RECORDINGS, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["openmetrics", "csv", "json"])
def test_old_recordings_export(recording: Path, fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"out.{fmt}"
    result = export(str(recording), "-O", fmt, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    text = out.read_text()
    if fmt == "openmetrics":
        assert text.endswith("# EOF\n")
        families = parse(text, openmetrics=True)  # whole, every sample kept
        lines = sum(1 for ln in text.splitlines() if not ln.startswith("#"))
        assert sum(len(f.samples) for f in families.values()) == lines
    elif fmt == "json":
        json.loads(text)


@pytest.mark.parametrize("fmt", ["openmetrics", "csv", "json"])
def test_a_probe_kind_this_version_lacks_is_named_not_dropped_silently(
    fmt: str, tmp_path: Path
) -> None:
    """A newer probetop's recording (same schema) with a kind this one has no
    metrics for: the export still works, and says which probe it left out."""
    newer = tmp_path / "newer-kind.jsonl"
    newer.write_text(DEMO.read_text().replace('"kind":"cpu"', '"kind":"dns"'))
    assert '"kind":"dns"' in newer.read_text()
    result = export(str(newer), "-O", fmt, "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    warned = [ln for ln in result.stderr.splitlines() if "of kind 'dns'" in ln]
    assert len(warned) == 1 and "probe cpu" in warned[0] and "not exported" in warned[0]
    assert "system." not in result.stderr  # the passive probes are left out by design
    if fmt == "json":
        doc = json.loads((tmp_path / "out").read_text())
        assert any("of kind 'dns'" in w for w in doc["warnings"])


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    missing = export(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert export(str(text)).returncode == 2
    broken = tmp_path / "broken.jsonl"
    lines = DEMO.read_text().splitlines()
    lines[5] = '{"type":"sample","probe":"cpu","t":"soon"}'
    broken.write_text("\n".join(lines) + "\n")
    result = export(str(broken), "--out", str(tmp_path / "x.om"))
    assert result.returncode == 2 and "line 6" in result.stderr
    assert not (tmp_path / "x.om").exists()  # no half file left behind
    assert not list(tmp_path.glob(".x.om.*"))
    bad_format = export(str(DEMO), "-O", "xml")
    assert bad_format.returncode == 2 and "invalid choice" in bad_format.stderr
    for result in (missing, bad_format):
        assert "Traceback" not in result.stderr


def test_out_never_overwrites_the_recording(tmp_path: Path) -> None:
    recording = tmp_path / "s.jsonl"
    recording.write_bytes(DEMO.read_bytes())
    before = recording.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(recording)
    for target in (recording, link, tmp_path / "." / "s.jsonl"):
        result = export(str(recording), "--out", str(target))
        assert result.returncode == 2, target
        assert "is the recording itself" in result.stderr
    assert recording.read_bytes() == before
    assert export(str(recording), "--out", str(tmp_path)).returncode == 2  # a directory


def test_torn_last_line_is_a_warning(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    data = DEMO.read_text().splitlines()[:-1]  # no footer
    torn.write_text("\n".join(data) + '\n{"type":"sample","pro')
    result = export(str(torn), "-O", "csv")
    assert result.returncode == 0
    assert "torn last line" in result.stderr and "no footer" in result.stderr


def _long_recording(path: Path, copies: int) -> int:
    """The demo's probe samples repeated ``copies`` times, shifted in time
    (counters keep adding up): a long recording, written line by line."""
    lines = DEMO.read_text().splitlines()
    header, body, foot = lines[0], lines[1:-1], lines[-1]
    samples = [json.loads(ln) for ln in body if '"type":"sample"' in ln]
    span = max(s["t"] for s in samples) + 1
    with path.open("w") as f:
        f.write(header + "\n")
        for k in range(copies):
            for s in samples:
                f.write(json.dumps({**s, "t": round(s["t"] + k * span, 6)}) + "\n")
        f.write(foot + "\n")
    return path.stat().st_size


def _peak_mib(action: Any) -> float:
    """Peak Python memory (tracemalloc) of ``action()``, MiB."""
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


def test_export_streams_a_long_recording(tmp_path: Path) -> None:
    """A recording 30 times the demo's (8 minutes of every probe, 2.6 MB):
    the JSON export's peak memory stays under 2 MiB (a line and the metric
    state), where reading it whole (``load_session``, as ``probetop report``
    does) takes over three times the file's size. (Measured under
    tracemalloc, which is slow: CSV reads the file twice, OpenMetrics keeps
    at most 64 KiB of each series in memory; docs/metrics.md has all three.)"""
    fmt = "json"
    from probetop.probes.record import load_session
    from probetop.tui.metrics.export import export as run_export

    large = tmp_path / "large.jsonl"
    size_mib = _long_recording(large, 30) / (1 << 20)
    with (tmp_path / "out").open("w") as out:
        streamed = _peak_mib(lambda: run_export(large, fmt, out))
    whole = _peak_mib(lambda: load_session(large))
    print(f"{size_mib:.1f} MiB recording: export {streamed:.1f} MiB, load_session {whole:.1f} MiB")
    assert streamed < 2.0
    assert whole > size_mib > streamed  # the measure sees a whole load


def test_out_is_never_a_device_fifo_or_kernel_file(tmp_path: Path) -> None:
    """--out passes the same check as --record: nothing but a regular file is
    written, and a device is never replaced by a file (this once turned
    /dev/full into a CSV file)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a device node")
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (null, fifo, Path("/proc/probetop-export")):
        result = export(str(DEMO), "-O", "csv", "--out", str(target))
        assert result.returncode == 2, (target, result.stderr)
        assert result.stderr.startswith("probetop: error: --out: cannot write"), result.stderr
        assert "Traceback" not in result.stderr
    assert stat.S_ISCHR(os.stat(null).st_mode) and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "null"]  # no temp file left


def test_out_through_a_symlink_replaces_the_file_not_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert export(str(DEMO), "-O", "csv", "--out", str(link)).returncode == 0
    assert link.is_symlink() and real.read_text().startswith("timestamp,")


def test_a_full_filesystem_leaves_the_old_file_whole(tmp_path: Path) -> None:
    """ENOSPC while exporting: exit 2 with the reason, the previous --out file
    intact, no temporary file left behind."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(mount)], check=True)
    try:
        out = mount / "out.json"
        out.write_text("previous\n")
        result = export(str(DEMO), "-O", "json", "--out", str(out))
        assert result.returncode == 2, result.stderr
        assert "No space left on device" in result.stderr
        assert out.read_text() == "previous\n"
        assert [p.name for p in mount.iterdir()] == ["out.json"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_no_build_info_point_is_lost_to_rounding(tmp_path: Path) -> None:
    """Samples 0.999 s apart at --interval 1 (timestamps rounded to the
    millisecond): every one has its build info point; it lost one when it
    waited a whole interval."""
    lines = DEMO.read_text().splitlines()
    head, out, t = json.loads(lines[0]), [lines[0]], 0.0
    cpu = [json.loads(ln) for ln in lines if '"probe":"cpu"' in ln.replace(" ", "")]
    samples = [r for r in cpu if r.get("type") == "sample"][:6]
    assert len(samples) == 6
    for rec in cpu:
        if rec.get("type") == "sample" and rec in samples:
            t += 0.999
            rec["t"], rec["interval"] = round(t, 3), 1.0
            out.append(json.dumps(rec))
        elif rec.get("type") != "sample" and rec.get("type") not in ("footer",):
            out.append(json.dumps(rec))
    head["probes"] = [p for p in head["probes"] if p.get("id") == "cpu"]
    out[0] = json.dumps(head)
    src = tmp_path / "s.jsonl"
    src.write_text("\n".join(out) + "\n")
    result = export(str(src), "-O", "openmetrics")
    assert result.returncode == 0, result.stderr
    families = parse(result.stdout, openmetrics=True)
    stamps = [float(s.timestamp) for s in families["probetop_build"].samples]
    events = [float(s.timestamp) for s in families["probetop_cpu_events"].samples]
    assert len(events) == 6 and stamps == events
