"""probes/disk/units.py: fio's units and rounding.

Two kinds of check: fio's num2str rules on fixed numbers (worked out from
lib/num2str.c by hand), and the real thing: fio prints its normal and JSON
reports of the same run, and our text made from fio's JSON numbers must be
fio's text, character for character.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from probetop.probes.disk import units
from probetop.probes.disk.report import format_iops_report


@pytest.mark.parametrize(
    ("num", "pow2", "unit", "text"),
    [
        (0, False, "", "0"),
        (1, True, "B/s", "1B/s"),  # --bs 1 at one write a second: not 0.0MB/s
        (9999, False, "", "9999"),
        (10000, False, "", "10.0k"),
        (12345, False, "", "12.3k"),  # remainder 345 -> one decimal
        (1234567, False, "", "1235k"),  # no room for decimals: carry 567 >= 500
        (1234467, False, "", "1234k"),
        (34_282_000, False, "B/s", "34.3MB/s"),
        (34_282_000, True, "B/s", "32.7MiB/s"),
        (1023, True, "B", "1023B"),
        (99_999, False, "", "100.0k"),  # 99.999 -> "%.1f" of .999 is "1.0": num + 1
        (5990, True, "B", "5990B"),
    ],
)
def test_num2str_follows_fio(num: int, pow2: bool, unit: units.Unit, text: str) -> None:
    assert units.num2str(num, 4, 1, pow2, unit) == text


def test_latency_scale_follows_fio() -> None:
    assert units.LatencyScale.for_summary(3036, 1_074_170, 20552.1).name == "usec"
    assert units.LatencyScale.for_summary(1500, 1_074_170, 20552.1).name == "nsec"  # min small
    assert units.LatencyScale.for_summary(3_000_000, 200_000_000, 2e6).name == "msec"
    usec = units.LatencyScale.for_values([4447, 81407])
    assert usec.name == "nsec"  # max not above 99999
    usec = units.LatencyScale.for_values([4447, 181407])
    assert usec.name == "usec" and usec.round_up(4447) == 5 and usec.round_up(4000) == 4


def test_bs_1_report_shows_bytes_per_second() -> None:
    """The report that used to say BW=0.0MB/s at --bs 1."""
    d = {
        "io_bytes": 5990, "runtime": 2002, "total_ios": 5990, "errors": 0,
        "clat_ns": {"min": 83000, "max": 8393000, "mean": 333960.0, "stddev": 733910.0,
                    "N": 5990, "percentile": {"50.000000": 167000}},
    }  # fmt: skip
    doc = {"params": {"rw": "write"}, "write": d, "fio_command": "fio ..."}
    text = format_iops_report(doc, target="f", reason="completed", duration_s=2.0)
    assert "IOPS=2992, BW=2992B/s (2992B/s)(5990B/2002msec)" in text, text
    assert "0.0MB/s" not in text


def test_a_job_that_ended_on_an_error_is_not_called_completed() -> None:
    """A target remounted read-only between the checks and the open ended the
    job with an error (exit 2) under the headline "completed, 4.7 s"."""
    doc = {
        "params": {"rw": "randwrite"},
        "fio_command": "fio ...",
        "error": "f: cannot open for I/O: read-only filesystem or device",
    }
    text = format_iops_report(doc, target="f", reason="completed", duration_s=4.7)
    assert text.splitlines()[0] == "probetop iops f: failed, 4.7 s", text
    stopped = format_iops_report(doc, target="f", reason="interrupted (SIGINT)", duration_s=1)
    assert stopped.splitlines()[0].startswith("probetop iops f: interrupted (SIGINT)")


FIO_LINE = re.compile(r"^\s+(read|write): IOPS=(\S+), BW=(\S+ \(\S+\))\((\S+)/(\d+)msec\)", re.M)
CLAT_LINE = re.compile(
    r"^\s+clat \((\w+)\): min=(\S+), max=(\S+), avg=\s*(\S+), stdev=\s*(\S+)$", re.M
)


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
@pytest.mark.parametrize(
    "job",
    [
        ["--rw=write", "--bs=1", "--size=64k", "--sync=1", "--rate_iops=300"],  # B/s
        ["--rw=randread", "--bs=4k", "--size=8M"],  # MiB/s, k IOPS
    ],
    ids=["bs1-sync-write", "4k-randread"],
)
def test_our_text_from_fios_json_is_fios_text(tmp_path: Path, job: list[str]) -> None:
    target = tmp_path / "f.img"
    target.write_bytes(b"\x5a" * (8 << 20))
    out = subprocess.run(
        ["fio", "--name=u", f"--filename={target}", *job, "--time_based", "--runtime=1",
         "--output-format=normal,json"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    start = out.index("\n{") + 1
    doc, end = json.JSONDecoder().raw_decode(out, start)
    normal = out[end:]
    fio_job = doc["jobs"][0]
    lines = FIO_LINE.findall(normal)
    assert lines, normal
    for ddir, iops_text, bw_text, io_text, runtime in lines:
        d = fio_job[ddir]
        assert int(runtime) == d["runtime"]
        bw = units.rates_per_runtime(d["io_bytes"], d["runtime"])
        assert bw == d["bw_bytes"]
        assert units.bandwidth(bw) == bw_text
        assert units.size(d["io_bytes"]) == io_text
        assert units.count(units.rates_per_runtime(d["total_ios"], d["runtime"])) == iops_text
    # clat's unit and min/max as fio's display_lat chooses them
    name, lo, hi, _avg, _dev = CLAT_LINE.findall(normal)[0]
    clat = fio_job[lines[0][0]]["clat_ns"]
    scale = units.LatencyScale.for_summary(clat["min"], clat["max"], clat["stddev"])
    assert scale.name == name
    assert units.num2str(scale.truncate(clat["min"]), 6) == lo
    assert units.num2str(scale.truncate(clat["max"]), 6) == hi
