"""A file whose name is not UTF-8 (an old server's Latin-1 names:
``caf\\xe9.img``) is a target, a recording and a label like any other.

Seen before (hostile3): ``iops /tmp/bad\\xffname.img`` and ``cpu --record
r\\xff.jsonl`` (also ``export --out``, ``compare --plot``: every output
takes the target lock) ended in a ``UnicodeEncodeError`` traceback, exit 1,
from the lock file's owner line; once past it, ``export -O openmetrics`` of
the recording and the live ``--textfile`` ended in the same traceback on
the probe's label. Python holds such a name's bytes as lone surrogates;
every text output writes them as ``\\xNN`` (``targetlock``, and
``tui/metrics/families.label_text``: the one place labels are made), while
the file itself is the one named.

Real runs: a file target in a temporary directory, the real exporter,
prometheus_client's own parsers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as text_parse

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROBETOP, *args], capture_output=True, text=True, errors="replace", timeout=120
    )


def test_a_target_and_a_recording_named_in_latin_1(tmp_path: Path) -> None:
    target = os.fsdecode(bytes(tmp_path) + b"/caf\xe9.img")
    rec = os.fsdecode(bytes(tmp_path) + b"/r\xe9.jsonl")
    textfile = tmp_path / "prom"
    textfile.mkdir()
    run = _run("iops", target, "--size", "4M", "--time", "1", "--headless",
               "--record", rec, "--textfile", str(textfile))  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert os.path.getsize(os.fsencode(target)) == 4 << 20  # the file named, laid out
    assert os.fsencode(rec) in [bytes(p) for p in tmp_path.iterdir()]

    exported = _run("export", rec, "-O", "openmetrics")
    assert exported.returncode == 0, exported.stderr
    families = {f.name: f for f in om_parse(exported.stdout)}
    ios = families["probetop_iops_ios"]
    shown = {s.labels["target"] for s in ios.samples}
    assert shown == {str(tmp_path) + "/caf\\xe9.img"}, shown

    prom = (textfile / "probetop.prom").read_text()
    scraped = [s for f in text_parse(prom) for s in f.samples if "target" in s.labels]
    assert scraped and {s.labels["target"] for s in scraped} == shown


def test_every_output_named_in_latin_1(tmp_path: Path) -> None:
    """``--record``, ``export --out`` and ``compare --plot`` each take the
    target lock of their file: each was the traceback."""
    rec = os.fsdecode(bytes(tmp_path) + b"/cpu\xe9.jsonl")
    run = _run("cpu", "--threads", "1", "--rate", "50", "--time", "1", "--headless",
               "--record", rec)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = os.fsdecode(bytes(tmp_path) + b"/out\xe9.csv")
    exported = _run("export", rec, "-O", "csv", "--out", out)
    assert exported.returncode == 0, exported.stderr
    assert os.path.getsize(os.fsencode(out)) > 0
    plot = os.fsdecode(bytes(tmp_path) + b"/p\xe9.svg")
    compared = _run("compare", rec, rec, "--plot", plot)
    assert "Traceback" not in compared.stderr, compared.stderr
    assert os.path.getsize(os.fsencode(plot)) > 0
