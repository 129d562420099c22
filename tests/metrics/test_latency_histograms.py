"""CPU and disk latencies as Prometheus histograms, against real probes: a
1 s CPU run and a 2 s iops run on a file in /dev/shm, scraped while they run
and parsed with prometheus_client; the final textfile is checked bucket for
bucket against the probe's own histogram (the recording's samples, the
CPU report's sysbench histogram) and its reported percentiles."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from metrics_fixtures import assert_never_backwards, free_port, parse, run_and_scrape, samples
from probetop.probes import cpu, disk
from probetop.probes.core.buckets import decode_runs, encode_runs
from probetop.probes.core.sample import Sample
from probetop.probes.cpu.metrics import CPU_BOUND_BUCKETS, CPU_BUCKETS_S, cpu_slot
from probetop.probes.disk.iops_metrics import IOPS_BUCKETS_NS, IOPS_BUCKETS_S, iops_slot


def _buckets(families: dict, name: str, **labels: str) -> list[tuple[float, float]]:
    """(le, cumulative count) of one histogram series, in exposition order."""
    return [
        (float(s.labels["le"]), float(s.value))
        for s in samples(families, f"{name}_bucket")
        if all(s.labels.get(k) == v for k, v in labels.items())
    ]


def _one(families: dict, name: str, **labels: str) -> float:
    found = [
        s.value
        for s in samples(families, name)
        if all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, found)
    return float(found[0])


def _check_cumulative(buckets: list[tuple[float, float]], bounds: Sequence[float], count: float):
    les = [le for le, _ in buckets]
    assert les[:-1] == list(bounds) and les[-1] == math.inf
    counts = [n for _, n in buckets]
    assert counts == sorted(counts), "bucket counts must be cumulative"
    assert counts[-1] == count, "+Inf bucket == _count"


def _possible_buckets(buckets: list[tuple[float, float]], rank: int, missing: int) -> set[int]:
    """Buckets that can hold the observation of ``rank`` (1-based) when up to
    ``missing`` observations of the run are not in the histogram."""
    out = set()
    below = 0.0
    for k, (_, cum) in enumerate(buckets):
        if below < rank <= cum + missing:
            out.add(k)
        below = cum
    return out


def _bucket_of(buckets: list[tuple[float, float]], value_s: float) -> int:
    """The Prometheus bucket a value falls in (le is inclusive)."""
    return next(k for k, (le, _) in enumerate(buckets) if value_s <= le)


def _sysbench_value_s(index: int) -> float:
    """sysbench 1.0's value of its bucket ``index``, by its formula (not the
    product's): 1024 log buckets from 0.001 ms to 100000 ms, bucket i worth
    exp(i / mult + ln 0.001) ms, mult = 1023 / (ln 100000 - ln 0.001)."""
    mult = 1023 / (math.log(100000) - math.log(0.001))
    return math.exp(index / mult + math.log(0.001)) / 1e3


def _fio_bucket_high_s(index: int) -> float:
    """The largest whole-ns latency in fio's bucket ``index`` (stat.c's layout,
    worked out here): below 128 the index itself; else with e = index // 64 - 1
    the bucket starts at (64 + index % 64) << e and is 2**e ns wide."""
    if index < 128:
        return index / 1e9
    e = index // 64 - 1
    return (((64 + index % 64) << e) + (1 << e) - 1) / 1e9


def test_bucket_bounds_coincide_with_native_edges() -> None:
    # CPU: each bound is a sysbench bucket edge; values just below/above it
    # land in the native buckets either side, hence in the right Prometheus bucket.
    for k, index in enumerate(CPU_BOUND_BUCKETS):
        edge_ms = CPU_BUCKETS_S[k] * 1e3
        assert cpu.bucket_upper_ms(index) == pytest.approx(edge_ms, rel=1e-15)
        below, above = edge_ms * (1 - 1e-9), edge_ms * (1 + 1e-9)
        from probetop.probes.core.sysbench.hist import bucket_of

        assert bucket_of(below) == index and bucket_of(above) == index + 1
        assert cpu_slot(bucket_of(below)) == k and cpu_slot(bucket_of(above)) == k + 1
    assert CPU_BUCKETS_S[0] < 1.1e-6 and CPU_BUCKETS_S[-1] > 10.0
    # Disk: every native bucket lies wholly under one bound (integer ns).
    for index in range(disk.CLAT_HIST_BUCKETS):
        low, high = disk.clat_bucket_range_ns(index)
        slot = iops_slot(index)
        if slot < len(IOPS_BUCKETS_NS):
            assert high - 1 <= IOPS_BUCKETS_NS[slot]
        if slot > 0:
            assert low > IOPS_BUCKETS_NS[slot - 1]
    assert IOPS_BUCKETS_S[0] < 1e-6 and IOPS_BUCKETS_S[-1] > 8.0
    # the native bucketing of the probe itself agrees with those edges
    from probetop.probes.disk.native import bucket

    for index in range(0, disk.CLAT_HIST_BUCKETS, 7):
        low, high = disk.clat_bucket_range_ns(index)
        assert bucket.py_func(low) == index
        if high < 1 << 40:
            assert bucket.py_func(high - 1) == index and bucket.py_func(high) == index + 1


def test_runs_round_trip_and_tolerate_garbage() -> None:
    counts = ((3, 1), (4, 2), (6, 5), (9, 1), (40, 7))
    runs = encode_runs(counts)
    assert runs == [[3, 1, 2, 0, 5, 0, 0, 1], [40, 7]]
    assert decode_runs(runs) == counts
    assert decode_runs(None) is None and decode_runs({"3": 1}) is None
    assert decode_runs([[1], "x", [2, True], [-1, 3], [5, 2, -1, 1]]) == ((5, 2), (7, 1))
    # through a recording's JSON and back, typed
    read = disk.DirectionRates(1.0, 2.0, 3.0, 4.0, 5.0, {"50.000000": 3.0}, clat_hist=counts)
    sample = disk.IopsInterval(read, None, 0.0).to_sample("iops:x", 1, 1.0)
    doc = json.loads(json.dumps(sample.extra))
    assert doc["clat_hist"] == {"read": runs}
    again = disk.IopsInterval.from_sample(Sample("iops:x", 1, 1.0, sample.values, doc))
    assert again.read == read
    # an old sample (no histogram) reads as None: the tracker leaves the histogram out
    old = Sample("cpu", 0, 1.0, {"eps": 1.0}, {"per_thread_events": [1]})
    assert cpu.CpuInterval.from_sample(old).lat_hist is None


def test_cpu_latency_histogram_is_sysbench_histogram(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    rec = tmp_path / "cpu.jsonl"
    argv = ["cpu", "--threads", "1", "--time", "1", "--interval", "0.25", "--json"]
    argv += ["--metrics", str(port), "--textfile", str(tmp_path), "--record", str(rec)]
    scrapes, result = run_and_scrape(argv, url, every_s=0.2)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    name = "probetop_cpu_event_latency_seconds"
    assert scrapes and all(s[name].type == "histogram" for s in scrapes if name in s)
    assert_never_backwards(scrapes)

    final = parse((tmp_path / "probetop.prom").read_text())
    assert final[name].type == "histogram"
    count = _one(final, f"{name}_count", probe="cpu")
    buckets = _buckets(final, name, probe="cpu")
    _check_cumulative(buckets, CPU_BUCKETS_S, count)
    # every event of the run, the last partial interval's too
    assert count == report["total_events"] > 0
    assert _one(final, f"{name}_sum") == pytest.approx(report["latency_ms"]["sum"] / 1e3, rel=1e-6)

    # bucket for bucket: sysbench's histogram of the report, each native
    # bucket's value placed in the first bucket whose le holds it
    expected = [0] * (len(CPU_BUCKETS_S) + 1)
    for index, n in report["histogram"].items():
        expected[_bucket_of(buckets, _sysbench_value_s(int(index)))] += n
    running, cumulative = 0, []
    for n in expected:
        running += n
        cumulative.append(float(running))
    assert [n for _, n in buckets] == cumulative

    # sysbench's percentiles lie in the bucket its own rank rule picks
    for pct in (50, 95, 99):
        reported_s = report["latency_ms"][f"p{pct}"] / 1e3
        rank = max(1, math.floor(count * pct / 100 + 0.5))
        assert _bucket_of(buckets, reported_s) in _possible_buckets(buckets, rank, 0), pct

    (gauge,) = samples(final, "probetop_cpu_event_latency_quantile_seconds")
    assert gauge.labels["quantile"] == "0.95" and 1e-6 < gauge.value < 10


@dataclass
class IopsRun:
    dir: Path
    recording: Path
    report: dict[str, Any]
    scrapes: list[dict[str, Any]]


@pytest.fixture(scope="module")
def iops_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IopsRun]:
    """A 2 s randrw iops run on a file in /dev/shm (tmp without it), with
    --metrics scraped, --textfile and --record."""
    import shutil

    tmp = tmp_path_factory.mktemp("iops")
    shm = Path("/dev/shm")
    scratch = (
        Path(tempfile.mkdtemp(prefix="probetop-hist-", dir=shm))
        if shm.is_dir() and os.access(shm, os.W_OK)
        else tmp
    )
    try:
        port = free_port()
        url = f"http://127.0.0.1:{port}/metrics"
        rec = tmp / "iops.jsonl"
        argv = ["iops", str(scratch / "iops.img"), "--size", "8M", "--rw", "randrw"]
        argv += ["--time", "2", "--interval", "0.5", "--json", "--metrics", str(port)]
        argv += ["--textfile", str(tmp), "--record", str(rec)]
        scrapes, result = run_and_scrape(argv, url, every_s=0.3)
        assert result.returncode == 0, result.stderr
        yield IopsRun(tmp, rec, json.loads(result.stdout), scrapes)
    finally:
        if scratch != tmp:
            shutil.rmtree(scratch, ignore_errors=True)


def test_iops_latency_histogram_is_the_probe_histogram(iops_run: IopsRun) -> None:
    report, rec = iops_run.report, iops_run.recording
    name = "probetop_iops_completion_latency_seconds"
    assert_never_backwards(iops_run.scrapes)

    # the recording's per-interval native histograms, summed and regrouped
    native: dict[str, Counter[int]] = {d: Counter() for d in disk.DIRECTIONS}
    for line in rec.read_text().splitlines():
        doc = json.loads(line)
        if doc.get("type") != "sample" or not doc["probe"].startswith("iops:"):
            continue
        sample = Sample(doc["probe"], 0, doc["interval"], doc["values"], doc.get("extra") or {})
        iv = disk.IopsInterval.from_sample(sample)
        for d in disk.DIRECTIONS:
            rates = iv.direction(d)
            if rates is None or iv.ramp:
                continue
            assert rates.clat_hist is not None
            for index, n in rates.clat_hist:
                native[d][index] += n

    final = parse((iops_run.dir / "probetop.prom").read_text())
    assert final[name].type == "histogram"
    for d in ("read", "write"):
        fio = report["jobs"][0][d]  # --json: the document fio writes
        count = _one(final, f"{name}_count", direction=d)
        buckets = _buckets(final, name, direction=d)
        # each native bucket in the first bucket whose le holds its largest value
        regrouped = [0] * len(buckets)
        for index, n in native[d].items():
            regrouped[_bucket_of(buckets, _fio_bucket_high_s(index))] += n
        _check_cumulative(buckets, IOPS_BUCKETS_S, count)
        running, cumulative = 0, []
        for n in regrouped:
            running += n
            cumulative.append(float(running))
        assert [n for _, n in buckets] == cumulative, d
        # the I/O counter and the histogram are read a moment apart while the
        # workers run: at most a few I/Os of the last sample differ
        ios = _one(final, "probetop_iops_ios_total", direction=d)
        assert abs(count - ios) <= 1e-3 * ios
        # fio's count also holds the I/O after the last sample (docs/metrics.md)
        missing = fio["total_ios"] - int(count)
        assert 0 <= missing <= 0.5 * fio["total_ios"], (d, missing, fio["total_ios"])
        assert count > 100
        mean_s = _one(final, f"{name}_sum", direction=d) / count
        assert mean_s == pytest.approx(fio["clat_ns"]["mean"] / 1e9, rel=0.5)
        # fio's percentiles lie in a bucket its rank rule can pick, given the missing I/Os
        for key in ("50.000000", "99.000000"):
            reported_s = fio["clat_ns"]["percentile"][key] / 1e9
            rank = max(1, math.ceil(fio["total_ios"] * float(key) / 100))
            allowed = _possible_buckets(buckets, rank, missing)
            assert _bucket_of(buckets, reported_s) in allowed, (d, key, reported_s, allowed)
        quantiles = {
            s.labels["quantile"]
            for s in samples(final, "probetop_iops_completion_latency_quantile_seconds")
            if s.labels["direction"] == d
        }
        assert {"0.5", "0.99", "0.9999"} <= quantiles


def test_iops_histogram_exports_to_openmetrics_csv_json(iops_run: IopsRun) -> None:
    """`probetop export` of the recording: the same histogram, promtool loads it."""
    import shutil
    import subprocess

    from metrics_fixtures import PROBETOP

    name = "probetop_iops_completion_latency_seconds"
    final = parse((iops_run.dir / "probetop.prom").read_text())

    def export(fmt: str) -> str:
        result = subprocess.run(
            [*PROBETOP, "export", str(iops_run.recording), "-O", fmt],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    doc = json.loads(export("json"))
    last: dict[str, Any] = {}
    for sample in doc["samples"]:
        for series in sample["series"]:
            if series["metric"] == name:
                last[series["labels"]["direction"]] = series["histogram"]
    assert set(last) == {"read", "write"}
    for d, hist in last.items():
        assert hist["count"] == _one(final, f"{name}_count", direction=d)
        exported = [[float(le), float(n)] for le, n in hist["buckets"]]
        textfile = [[le, n] for le, n in _buckets(final, name, direction=d)]
        assert exported == textfile[: len(exported)] and len(exported) >= len(IOPS_BUCKETS_S)

    header = next(csv.reader(io.StringIO(export("csv"))))
    assert any(c.startswith(f"{name}_count{{") for c in header)
    assert not any(c.startswith(f"{name}_bucket") for c in header)

    text = export("openmetrics")
    # as its component series (docs/metrics.md): the official parser takes it whole
    assert f"# TYPE {name}_bucket unknown" in text and f'{name}_bucket{{direction="read"' in text
    lines = sum(1 for ln in text.splitlines() if not ln.startswith("#"))
    assert sum(len(f.samples) for f in parse(text, openmetrics=True).values()) == lines
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus provides it)")
    source = iops_run.dir / "iops.om"
    source.write_text(text)
    result = subprocess.run(
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(source),
            str(iops_run.dir / "db"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
