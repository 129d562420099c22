"""Drop-in parity with fio's JSON: the same job run by fio and by probetop in
the same test, on a file in /dev/shm (buffered: tmpfs has no O_DIRECT).

The shape (field names, JSON types, units: probes/disk/fio_parity.py) must
match exactly, on fio's output as on ours; the values must agree within
margins measured on a shared machine: paired runs, alternating, and the
median of the pairs' ratios (IOPS within 10 %: both are rate-capped).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import disk_fixtures
import numpy as np
import pytest
from disk_fixtures import run_cli
from probetop.probes.disk import units
from probetop.probes.disk.counters import HIST_BUCKETS, hist_percentiles
from probetop.probes.disk.fio_parity import FIO_FIELDS, get, ratios, shape_problems
from probetop.probes.disk.workers import FIO_BUFFER_ALIGNMENT

fast_dir = disk_fixtures.fast_dir
SECONDS = 2  # whole seconds: fio reads --runtime=1.5 as 1
pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")


def _fio(path: Path, rw: str) -> dict:
    out = subprocess.run(
        ["fio", "--name=parity", f"--filename={path}", f"--rw={rw}", "--bs=4k",
         "--ioengine=psync", "--iodepth=1", "--numjobs=1", "--direct=0",
         # probetop caps the job; fio caps each direction (its fio_command splits it)
         f"--rate_iops={'2000' if rw == 'randread' else '1000,1000'}", "--time_based",
         f"--runtime={SECONDS:g}", "--group_reporting",
         "--output-format=json"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    return json.loads(out[out.index("{") :])["jobs"][0]


def _ours(path: Path, rw: str) -> dict:
    """jobs[0] of probetop's --json: the document fio writes."""
    proc = run_cli(
        ["iops", str(path), "--rw", rw, "--bs", "4k", "--buffered", "--rate-iops", "2000",
         "--time", f"{SECONDS:g}", "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["jobs"][0]


PAIRS = 3


@pytest.mark.parametrize("rw", ["randread", "randrw"])
def test_fio_json_fields_match_and_values_agree(fast_dir: Path, rw: str) -> None:
    target = fast_dir / "parity.img"
    target.write_bytes(b"\x5a" * (16 << 20))
    # Paired: probetop and fio alternate, PAIRS times, both at real-time
    # priority where the test may (the rate cap is what is compared, not the
    # scheduler's share); the median of the pairs' ratios is what must agree.
    runs = []
    with disk_fixtures.promptly_scheduled():
        for _ in range(PAIRS):
            runs.append((_ours(target, rw), _fio(target, rw)))
    ours, fio = runs[-1]
    directions = ["read"] if rw == "randread" else ["read", "write"]
    for d in directions:
        theirs, mine = fio[d], ours[d]
        # Shape: fio's own output passes the contract (so the contract is
        # fio's), and ours passes it too; same types field by field.
        assert shape_problems(theirs) == [], theirs
        assert shape_problems(mine) == [], mine
        for path, spec in FIO_FIELDS.items():
            assert isinstance(
                get(mine, path), spec.kind if spec.kind is not float else (int, float)
            )
        assert set(mine["clat_ns"]["percentile"]) == set(theirs["clat_ns"]["percentile"])
        # Units: a 2 s run is ~2000 ms in both; latencies are ns in both
        # (a 4k buffered I/O on tmpfs takes 0.3-500 us, never ms or s).
        for block in (theirs, mine):
            assert 1600 <= block["runtime"] <= 3000, block["runtime"]
            assert 300 <= block["clat_ns"]["percentile"]["50.000000"] <= 500_000
        # Values: both are held to 2000 IO/s per job by the rate cap (probetop
        # measured 1,980/s quiet, fio its 2,000), so the median paired ratio
        # agrees within 10 %; latency (0.3-500 us on a shared tmpfs, no cap)
        # within 3x either way.
        pairs = [ratios(f[d], o[d]) for o, f in runs]
        for key, lo, hi in (("iops", 0.9, 1.1), ("bw_bytes", 0.9, 1.1)):
            values = [r[key] for r in pairs]
            assert None not in values and lo <= statistics.median(values) <= hi, (key, values)
        p50s = [r["clat_ns.percentile.50.000000"] for r in pairs]
        assert None not in p50s and 1 / 3 <= statistics.median(p50s) <= 3.0, p50s


def test_the_contract_rejects_what_is_not_fios_shape() -> None:
    """The check can fail: a block in MB/s, a string, a missing field."""
    good = {
        "io_bytes": 4096000, "io_kbytes": 4000, "bw_bytes": 2048000, "bw": 2000,
        "iops": 500.0, "runtime": 2000, "total_ios": 1000, "short_ios": 0, "drop_ios": 0,
        "bw_min": 1900, "bw_max": 2100, "bw_agg": 100.0, "bw_mean": 2000.0, "bw_dev": 100.0,
        "bw_samples": 2, "iops_min": 490, "iops_max": 510, "iops_mean": 500.0,
        "iops_stddev": 10.0, "iops_samples": 2,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": {"min": 1000, "max": 90000, "mean": 5000.0, "stddev": 10.0, "N": 1000,
                    "percentile": {"50.000000": 4992}},
        "lat_ns": {"min": 1010, "max": 90100, "mean": 5070.0, "stddev": 10.0, "N": 1000},
    }  # fmt: skip
    assert shape_problems(good) == []
    assert shape_problems({**good, "bw": 2.0}) != []  # MB/s, not KiB/s
    assert shape_problems({**good, "bw_bytes": 2048}) != []  # per ms
    assert shape_problems({**good, "runtime": 2.0}) != []  # seconds as float
    assert shape_problems({k: v for k, v in good.items() if k != "io_kbytes"}) != []
    bad_pct = {**good, "clat_ns": {**good["clat_ns"], "percentile": {"50": 4992}}}
    assert shape_problems(bad_pct) != []
    assert shape_problems({k: v for k, v in good.items() if k != "lat_ns"}) != []
    assert shape_problems({**good, "bw_mean": 3000.0}) != []  # outside its samples
    assert shape_problems({k: v for k, v in good.items() if k != "iops_samples"}) != []
    # lat is slat + clat: a total that is clat alone while slat has samples
    # (the meaning probetop's clat had before it split off slat) is refused.
    slat = {"min": 2000, "max": 30000, "mean": 9000.0, "stddev": 5.0, "N": 1000}
    assert shape_problems({**good, "slat_ns": slat}) != []
    assert shape_problems({**good, "slat_ns": slat, "lat_ns": {**good["lat_ns"],
                           "mean": 14000.0, "max": 120000}}) == []  # fmt: skip


def _latency_means(block: dict) -> tuple[float, float, float]:
    return tuple(float(block[k]["mean"]) for k in ("slat_ns", "clat_ns", "lat_ns"))


def test_async_latencies_mean_what_fios_do(fast_dir: Path) -> None:
    """fio's clat for an asynchronous engine starts when the submitting call
    returns, its slat is that call. Buffered libaio on tmpfs does the whole
    1 MiB copy inside io_submit, so the time is slat's and clat is the
    (short) reap, in fio's output and in ours; a clat that started before
    io_submit (probetop before 0.9) would hold the copy."""
    target = fast_dir / "parity-aio.img"
    target.write_bytes(b"\x5a" * (64 << 20))
    fio = json.loads(
        subprocess.run(
            ["fio", "--name=parity", f"--filename={target}", "--rw=read", "--bs=1M",
             "--ioengine=libaio", "--iodepth=1", "--direct=0", FIO_BUFFER_ALIGNMENT, "--time_based",
             f"--runtime={SECONDS:g}", "--output-format=json"],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout
    )["jobs"][0]["read"]  # fmt: skip
    proc = run_cli(
        ["iops", str(target), "--rw", "read", "--bs", "1M", "--buffered", "--ioengine",
         "libaio", "--iodepth", "1", "--time", f"{SECONDS:g}", "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # fio's default buffer is unaligned: its copy out of the page cache ran
    # 4-5x slower than ours; the equivalent command says which buffers we use.
    assert FIO_BUFFER_ALIGNMENT in shlex.split(doc["probetop"]["fio_command"])
    ours = doc["jobs"][0]["read"]
    for block in (fio, ours):
        assert shape_problems(block) == [], block
        slat, clat, _ = _latency_means(block)
        assert block["slat_ns"]["N"] == block["clat_ns"]["N"] > 0
        assert slat > 3 * clat, (slat, clat)
    r = ratios(fio, ours)
    for path in ("slat_ns.mean", "lat_ns.mean"):
        assert r[path] is not None and 0.25 <= r[path] <= 4.0, r


# -- the whole document: --output-format json / json+ / terse ----------------


def shape(value: Any, path: str = "") -> dict[str, str]:
    """The reader a script written for fio relies on: every key path and its
    JSON type. Keys that are data (a percentile's or a bin's value) are not
    paths: ``percentile`` keeps its key set (fio's list), ``bins`` is one ``*``."""
    if isinstance(value, dict):
        out = {path: "object"}
        for key, item in value.items():
            sub = f"{path}/{'*' if path.endswith('/bins') else key}"
            out.update(shape(item, sub))
        return out
    if isinstance(value, list):
        out = {path: "array"}
        for item in value:
            out.update(shape(item, f"{path}[]"))
        return out
    if isinstance(value, bool):
        return {path: "bool"}
    if isinstance(value, int):
        return {path: "int"}
    if isinstance(value, float):
        return {path: "float"}
    return {path: type(value).__name__}


def _fio_run(fio_command: str, fmt: str) -> str:
    return subprocess.run(
        [*shlex.split(fio_command), f"--output-format={fmt}"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip


def _probetop_run(target: Path, fmt: str, *extra: str) -> str:
    proc = run_cli(
        ["iops", str(target), "--rw", "randrw", "--bs", "4k", "--rate-iops", "1000",
         "--time", f"{SECONDS:g}", "--output-format", fmt, *extra]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def disk_file() -> Iterator[Path]:
    """A data file on a real block device (the disk under /var/tmp), so both
    tools have a disk_util entry; O_DIRECT there."""
    base = Path("/var/tmp")
    path = base / f"probetop-test-parity-{uuid.uuid4().hex[:8]}.img"
    path.write_bytes(b"\x5a" * (16 << 20))
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def test_same_reader_gets_same_keys_and_types_from_fio_and_probetop(disk_file: Path) -> None:
    """json+ of the same job (probetop's fio_command run by fio): every key
    path and JSON type of fio's document is in probetop's, and probetop adds
    only its own "probetop" key."""
    ours = json.loads(_probetop_run(disk_file, "json+"))
    theirs = json.loads(_fio_run(ours["probetop"]["fio_command"], "json+"))
    mine = shape({k: v for k, v in ours.items() if k != "probetop"})
    fios = shape(theirs)
    missing = {k: v for k, v in fios.items() if k not in mine}
    wrong = {k: (mine[k], v) for k, v in fios.items() if k in mine and mine[k] != v}
    extra = {k: v for k, v in mine.items() if k not in fios}
    assert not missing and not wrong and not extra, (missing, wrong, extra)
    assert ours["global options"] == theirs["global options"]
    assert ours["jobs"][0]["job options"] == theirs["jobs"][0]["job options"]
    assert [d["name"] for d in ours["disk_util"]] == [d["name"] for d in theirs["disk_util"]]
    # The kernel saw the direct I/O: at least the reads probetop counted.
    job = ours["jobs"][0]
    assert ours["disk_util"][0]["read_ios"] >= 0.9 * job["read"]["total_ios"]
    for doc in (ours, theirs):
        for d in ("read", "write"):
            block = doc["jobs"][0][d]
            assert shape_problems(block) == [], block
            assert sum(block["clat_ns"]["bins"].values()) == block["clat_ns"]["N"]


def _fio_bucket_value(index: int) -> int:
    """fio's plat_idx_to_val, written out from fio's stat.c rule (the
    bucket's low edge plus half its width; below 128 the index itself)."""
    if index < 128:
        return index
    error_bits = (index >> 6) - 1
    base = 1 << (error_bits + 6)
    return int(base + ((index % 64) + 0.5) * (1 << error_bits))


def test_bins_are_fios_bucket_values(fast_dir: Path) -> None:
    """Every bin key, fio's and probetop's, is one of fio's bucket values."""
    target = fast_dir / "bins.img"
    target.write_bytes(b"\x5a" * (16 << 20))
    values = {_fio_bucket_value(i) for i in range(29 * 64)}
    ours = json.loads(_probetop_run(target, "json+", "--buffered"))
    theirs = json.loads(_fio_run(ours["probetop"]["fio_command"], "json+"))
    for doc in (ours, theirs):
        bins = doc["jobs"][0]["read"]["clat_ns"]["bins"]
        assert bins and {int(k) for k in bins} <= values


def _clat2csv() -> str:
    found = os.environ.get("FIO_JSONPLUS_CLAT2CSV") or shutil.which("fio_jsonplus_clat2csv")
    if not found:
        pytest.skip(
            "fio's tools/fio_jsonplus_clat2csv is not installed (Debian's fio package "
            "ships it in /usr/bin; or set FIO_JSONPLUS_CLAT2CSV to a copy of fio's script)"
        )
    return found


def test_fio_jsonplus_clat2csv_reads_both(fast_dir: Path) -> None:
    """fio's own json+ reader converts probetop's json+ as it does fio's, and
    its --validate finds the CSV matches the bins."""
    tool = _clat2csv()
    target = fast_dir / "csv.img"
    target.write_bytes(b"\x5a" * (16 << 20))
    ours_text = _probetop_run(target, "json+", "--buffered")
    fio_text = _fio_run(json.loads(ours_text)["probetop"]["fio_command"], "json+")
    for name, text in (("ours", ours_text), ("fio", fio_text)):
        src = fast_dir / f"{name}.json"
        src.write_text(text)
        dest = fast_dir / f"{name}.csv"
        for extra in ([], ["--validate"]):
            proc = subprocess.run(
                [tool, str(src), str(dest), *extra], capture_output=True, text=True, timeout=60
            )
            if proc.returncode != 0 and "No module named 'six'" in proc.stderr:
                pytest.skip("fio_jsonplus_clat2csv needs python3-six")
            assert proc.returncode == 0, proc.stderr
        rows = (fast_dir / f"{name}_job0.csv").read_text().strip().splitlines()
        header = [c.strip() for c in rows[0].split(",")]
        col = header.index("read_clat_ns_cumulative")
        last = [r.split(",")[col].strip() for r in rows[1:] if r.split(",")[col].strip()][-1]
        assert int(last) == json.loads(text)["jobs"][0]["read"]["clat_ns"]["N"]


def test_terse_line_has_fios_fields(fast_dir: Path) -> None:
    """The terse v3 line: as many ';' fields as fio's for the same job, the
    same fixed fields (version, fio version, job name), and each numeric
    field numeric where fio's is."""
    target = fast_dir / "terse.img"
    target.write_bytes(b"\x5a" * (16 << 20))
    ours = _probetop_run(target, "terse", "--buffered").strip().split(";")
    doc = json.loads(_probetop_run(target, "json", "--buffered"))
    theirs = _fio_run(doc["probetop"]["fio_command"], "terse").strip().split(";")
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    assert ours[:3] == theirs[:3] == ["3", "fio-3.33", "probetop"]

    def kind(field: str) -> str:
        if "=" in field:
            return "pct=" + field.split("=")[0]
        if field.endswith("%"):
            return "percent"
        try:
            int(field)
            return "int"
        except ValueError:
            pass
        try:
            float(field)
            return "float"
        except ValueError:
            return "text"

    assert [kind(f) for f in ours] == [kind(f) for f in theirs]


def test_json_is_output_format_json_and_clashes_say_so(fast_dir: Path) -> None:
    target = fast_dir / "alias.img"
    target.write_bytes(b"\x5a" * (8 << 20))
    proc = run_cli(["iops", str(target), "--buffered", "--time", "1", "--json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["fio version"] == "fio-3.33" and doc["jobs"][0]["read"]["total_ios"] > 0
    assert "bins" not in doc["jobs"][0]["read"]["clat_ns"]  # json, not json+
    bad = run_cli(["iops", str(target), "--buffered", "--json", "--output-format", "terse"])
    assert bad.returncode == 2 and "--output-format" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_percentile_rank_is_fios_long_double_rule() -> None:
    """Hand-computed: 100 I/Os of 1, 2, ... 100 ns (one per bucket, below 128
    a bucket is exact). fio's threshold is (long double) p / 100.0 * N: 30 %
    of 100 in 80-bit long double is 30.000000000000000002, so the 30th I/O
    does not reach it and fio reports the 31st (31 ns); 60 % likewise gives
    61 ns; 50 %, 90 % and 99 % are exact (50, 90, 99 ns); 99.9 % is just
    above 99.9 and needs the 100th. Checked against a C program doing fio's
    arithmetic on x86-64. Exact decimal arithmetic (probetop before) gave
    30 and 60."""
    hist = np.zeros(HIST_BUCKETS, dtype=np.int64)
    hist[1:101] = 1
    pct = hist_percentiles(hist, (1, 30, 50, 60, 90, 99, 99.9))
    if np.finfo(np.longdouble).nmant != 63:
        pytest.skip("the hand-computed values are for x86-64's 80-bit long double")
    assert pct == {1: 1.0, 30: 31.0, 50: 50.0, 60: 61.0, 90: 90.0, 99: 99.0, 99.9: 100.0}
    # Bucket values above 127 ns are fio's (low edge + half width): 128..129 -> 129.
    hist = np.zeros(HIST_BUCKETS, dtype=np.int64)
    hist[128] = 1
    assert hist_percentiles(hist, (50,)) == {50: 129.0}


def test_fractional_time_goes_to_fio_in_its_units(fast_dir: Path) -> None:
    """--time 0.3: the printed command says --runtime=300ms (fio reads a bare
    0.3 as 0 s, refuses time_based and runs size-based), fio accepts it and
    runs ~300 ms, and "global options" lists runtime as fio does."""
    target = fast_dir / "frac.img"
    target.write_bytes(b"\x5a" * (16 << 20))
    proc = run_cli(["iops", str(target), "--buffered", "--time", "0.3", "--ramp", "0.25",
                    "--json"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    command = ours["probetop"]["fio_command"]
    assert "--runtime=300ms" in command and "--ramp_time=250ms" in command, command
    run = subprocess.run([*shlex.split(command), "--output-format=json"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0 and "requires a runtime" not in run.stderr + run.stdout, run
    theirs = json.loads(run.stdout[run.stdout.index("{") :])
    assert ours["global options"]["runtime"] == theirs["global options"]["runtime"] == "300ms"
    assert 250 <= theirs["jobs"][0]["read"]["runtime"] <= 1000
    # Whole seconds stay plain, as fio's own job files write them.
    assert units.fio_time(2) == "2" and units.fio_time(1.5) == "1500ms"
    assert units.fio_time(0.00025) == "250us"


# One parser for fio's --output-format=normal, as a script would grep it.
NORMAL_PATTERNS = {
    "job": re.compile(r"^(\S+): \(groupid=(\d+), jobs=(\d+)\): err=\s*(\d+): pid=(\d+): .+$", re.M),
    "dir": re.compile(
        r"^  (read|write): IOPS=([\d.]+k?), BW=(\S+) \((\S+)\)\((\S+)/(\d+)msec\)"
        r"(?:; \d+ zone resets)?$",
        re.M,
    ),
    "clat": re.compile(r"^    clat \((nsec|usec|msec)\): min=\s*\S+, max=\s*\S+, avg=.+$", re.M),
    "pct_head": re.compile(r"^    clat percentiles \((nsec|usec|msec)\):$", re.M),
    "pct_row": re.compile(r"^     \|((?: [ \d]\d\.\d\dth=\[ *\d+\],?)+)$", re.M),
    "status": re.compile(r"^Run status group (\d+) \(all jobs\):$", re.M),
    "group": re.compile(
        r"^ *(READ|WRITE): bw=(\S+) \((\S+)\), (\S+)-(\S+) \((\S+)-(\S+)\), "
        r"io=(\S+) \((\S+)\), run=(\d+)-(\d+)msec$",
        re.M,
    ),
    "disk_head": re.compile(r"^Disk stats \(read/write\):$", re.M),
    "disk": re.compile(
        r"^  (\S+): ios=(\d+)/(\d+), merge=(\d+)/(\d+), ticks=(\d+)/(\d+), "
        r"in_queue=(\d+), util=([\d.]+)%$",
        re.M,
    ),
}


def _parse_normal(text: str) -> dict[str, Any]:
    """What each pattern finds, reduced to what must not differ between tools."""
    found = {k: p.findall(text) for k, p in NORMAL_PATTERNS.items()}
    pct_keys = [re.findall(r"([\d.]+)th=", row) for row in found["pct_row"]]
    return {
        "job": [(m[0], m[1], m[2], m[3]) for m in found["job"]],
        "dirs": [m[0] for m in found["dir"]],
        "clat": len(found["clat"]),
        "pct_head": len(found["pct_head"]),
        "pct_rows": [len(k) for k in pct_keys],
        "pct_keys": [k for row in pct_keys for k in row],
        "status": found["status"],
        "group": [m[0] for m in found["group"]],
        "disk_head": len(found["disk_head"]),
        "disks": [m[0] for m in found["disk"]],
    }


def test_normal_output_has_fios_lines_for_the_same_regexes(disk_file: Path) -> None:
    """--output-format normal: fio's job header, percentile block, run status
    group and disk stats, found by one regex parser in both outputs."""
    ours = _probetop_run(disk_file, "normal")
    command = re.search(r"same job in fio: (fio .+)$", ours, re.M)
    assert command, ours
    theirs = _fio_run(command.group(1), "normal")
    mine, fios = _parse_normal(ours), _parse_normal(theirs)
    assert fios["job"] and fios["status"] and fios["disks"], theirs  # the parser reads fio
    assert mine == fios, (ours, theirs)


# A number (with fio's unit or k/M suffix, and the padding fio's %5llu puts
# before it) is one placeholder; a run of "N=P%" cells is one cell, as the
# buckets shown differ with the numbers.
_NUMBER = re.compile(r" *\d+(?:\.\d+)?(?:[KMGTP]i?B(?:/s)?|[kMGTP]?B(?:/s)?|[kMG](?=[,)\s]|$))?")
_CELLS = re.compile(r"(?:>=)?#=#%(?:, ?(?:>=)?#=#%)*")


def _line_shapes(text: str) -> list[str]:
    """fio's report from the job header to the disk stats, each line with its
    numbers replaced by ``#``; blank lines kept (they are layout too)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.search(r": \(groupid=\d+, jobs=", line))
    end = max(i for i, line in enumerate(lines) if re.match(r"^  \S+: ios=", line))
    shapes = [_NUMBER.sub("#", line) for line in lines[start : end + 1]]
    shapes = [_CELLS.sub("#=#%", s) if s.startswith("  lat (") else s for s in shapes]
    # fio picks a latency line's unit by its numbers too
    shapes = [re.sub(r"\((?:nsec|usec|msec)\)", "(UNIT)", s) for s in shapes]
    # fio's job name and the date are ours to choose; the layout is not.
    shapes[0] = re.sub(r"^\S+: (.*): pid=#: .*$", r"NAME: \1: pid=#: DATE", shapes[0])
    return shapes


def _line_kind(shape: str) -> str:
    """What a line is: its label before the first ':' / '=' (``bw (  KiB/s)``,
    ``issued rwts``, ``lat (msec)``), or the whole shape for a label-less line."""
    return re.split(r"[:=]", shape, maxsplit=1)[0].strip() or shape


def test_normal_output_is_fios_layout_line_for_line(disk_file: Path) -> None:
    """--output-format normal of an async random-read job against fio's for the
    same job (probetop's own fio command): the same line kinds, and the same
    line shapes in the same order, numbers aside (the latency-distribution
    lines' count follows the numbers: compared as a set of kinds)."""
    proc = run_cli(
        ["iops", str(disk_file), "--rw", "randread", "--bs", "4k", "--size", "16M",
         "--iodepth", "4", "--ioengine", "libaio", "--time", "2", "--output-format", "normal"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    command = re.search(r"same job in fio: (fio .+)$", proc.stdout, re.M)
    assert command, proc.stdout
    theirs, ours = _line_shapes(_fio_run(command.group(1), "normal")), _line_shapes(proc.stdout)
    assert {_line_kind(s) for s in ours} == {_line_kind(s) for s in theirs}, (ours, theirs)

    def fixed(shapes: list[str]) -> list[str]:
        return [s for s in shapes if not s.startswith("  lat (")]

    assert fixed(ours) == fixed(theirs), (proc.stdout, theirs)
    dist = re.compile(r"^  lat \(UNIT\)   :#=#%$")  # the space goes with "#"
    assert all(dist.match(s) for s in set(ours) - set(fixed(ours))), ours


# -- --numjobs N: one jobs[] entry per job, unless --group_reporting ----------


def _jobs_run(target: Path, fmt: str, *extra: str) -> str:
    return _probetop_run(target, fmt, "--numjobs", "2", *extra)


@pytest.mark.parametrize("grouped", [False, True])
def test_numjobs_reports_each_job_as_fio_unless_grouped(disk_file: Path, grouped: bool) -> None:
    """``--numjobs 2`` without ``--group_reporting``: fio writes two jobs[]
    entries, each with its own counters, the same jobname and groupid 0;
    with it, one entry for the group. probetop's document, and fio's for
    its fio_command run in the same test, have the same entries, key paths
    and types."""
    extra = ("--group_reporting",) if grouped else ()  # fio's spelling, read as ours
    ours = json.loads(_jobs_run(disk_file, "json+", *extra))
    command = ours["probetop"]["fio_command"]
    assert ("--group_reporting" in shlex.split(command)) is grouped, command
    theirs = json.loads(_fio_run(command, "json+"))
    want = 1 if grouped else 2
    assert len(theirs["jobs"]) == want and len(ours["jobs"]) == want, (theirs["jobs"], want)
    mine = shape({k: v for k, v in ours.items() if k != "probetop"})
    fios = shape(theirs)
    assert mine == fios, {k for k in set(mine) | set(fios) if mine.get(k) != fios.get(k)}
    group = ours["probetop"]
    for d in ("read", "write"):
        counts = [job[d]["total_ios"] for job in ours["jobs"]]
        # each job's own counters: they add up to the run's, none is the run's
        assert sum(counts) == group[d]["total_ios"] > 0, (counts, group[d]["total_ios"])
        assert all(c > 0 for c in counts), counts
        for doc in (ours, theirs):
            for job in doc["jobs"]:
                block = job[d]
                assert shape_problems(block) == [], block
                assert sum(block["clat_ns"]["bins"].values()) == block["clat_ns"]["N"]
                # bw_agg: the job's mean rate over the group's (fio's "per=")
                assert 0 < block["bw_agg"] <= 100.0, block["bw_agg"]
                if not grouped:
                    assert block["bw_agg"] < 90.0, block["bw_agg"]
    for a, b in zip(ours["jobs"], theirs["jobs"], strict=True):
        assert (a["jobname"], a["groupid"], a["job options"]) == (
            b["jobname"],
            b["groupid"],
            b["job options"],
        )


HEADER = re.compile(r"^(\S+): \(groupid=(\d+), jobs=(\d+)\): err= 0: pid=\d+: ")
RUN_STATUS = re.compile(
    r"^ +(READ|WRITE): bw=\S+ \(\S+\), \S+-\S+ \(\S+-\S+\), io=\S+ \(\S+\), run=(\d+)-(\d+)msec$"
)


@pytest.mark.parametrize("grouped", [False, True])
def test_numjobs_text_report_has_fios_job_blocks(disk_file: Path, grouped: bool) -> None:
    """The normal report: a job block per job (``NAME: (groupid=0, jobs=1)``)
    without --group_reporting, one (``jobs=2``) with it, the same job lines
    in the same order as fio's text for the fio_command, and the run
    status lines as fio's."""
    extra = ("--group-reporting",) if grouped else ()
    text = _jobs_run(disk_file, "normal", *extra)
    marker = "same job in fio: "
    command = next(line.split(marker, 1)[1] for line in text.splitlines() if marker in line)
    theirs = _fio_run(command, "normal")

    def blocks(report: str) -> list[tuple[str, ...]]:
        return [m.groups() for m in map(HEADER.match, report.splitlines()) if m]

    def labels(report: str) -> list[str]:
        """Each job line's label (what is before its first ':' or '='), from
        the first job header to the run status: the layout, not the values
        (the ``lat (unit)`` lines vary with the buckets a run filled)."""
        lines = report.splitlines()
        first = next(i for i, line in enumerate(lines) if HEADER.match(line))
        out = []
        for line in lines[first:]:
            if line.startswith("Run status"):
                break
            if line.startswith("  lat (") or line.startswith("     |"):
                continue
            out.append(re.split(r"[:=]", line, maxsplit=1)[0])
        return out

    want = [("probetop", "0", "2")] if grouped else [("probetop", "0", "1")] * 2
    assert blocks(theirs) == want, theirs
    assert blocks(text) == want, text
    assert labels(text) == labels(theirs), (labels(text), labels(theirs))
    for report in (text, theirs):
        status = [line for line in report.splitlines() if RUN_STATUS.match(line)]
        assert [RUN_STATUS.match(s).group(1) for s in status] == ["READ", "WRITE"], report  # type: ignore[union-attr]


def test_numjobs_terse_and_clat2csv_per_job(disk_file: Path, fast_dir: Path) -> None:
    """Without --group_reporting: one terse line per job with fio's field
    count, and fio's own json+ reader writes a CSV per job from probetop's
    json+, as from fio's."""
    ours = _jobs_run(disk_file, "terse").strip().splitlines()
    doc = json.loads(_jobs_run(disk_file, "json+"))
    theirs = _fio_run(doc["probetop"]["fio_command"], "terse").strip().splitlines()
    assert len(ours) == len(theirs) == 2, (ours, theirs)
    assert [len(x.split(";")) for x in ours] == [len(x.split(";")) for x in theirs]
    tool = _clat2csv()
    src = fast_dir / "jobs.json"
    src.write_text(json.dumps(doc))
    for extra in ([], ["--validate"]):
        proc = subprocess.run(
            [tool, str(src), str(fast_dir / "jobs.csv"), *extra],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if proc.returncode != 0 and "No module named 'six'" in proc.stderr:
            pytest.skip("fio_jsonplus_clat2csv needs python3-six")
        assert proc.returncode == 0, proc.stderr
    assert (fast_dir / "jobs_job0.csv").exists() and (fast_dir / "jobs_job1.csv").exists()


def test_a_run_stopped_before_any_io_writes_each_job_with_zeros() -> None:
    """Nothing measured (stopped during the layout): --jobs 3 without
    --group_reporting gives three zero jobs, as fio writes each job that did
    no I/O; with it, one."""
    from probetop.probes.disk.fiodoc import fio_document

    summary = {"params": {"jobs": 3}, "fio_command": "fio --filename=x --numjobs=3 --name=probetop"}
    jobs = fio_document(summary)["jobs"]
    assert len(jobs) == 3 and all(j["read"]["total_ios"] == 0 for j in jobs)
    grouped = {**summary, "fio_command": "fio --numjobs=3 --group_reporting --name=probetop"}
    assert len(fio_document(grouped)["jobs"]) == 1
