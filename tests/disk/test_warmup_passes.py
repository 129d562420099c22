"""The warm-up's per-pass rows and total (passes.py), end to end on tmpfs
files: ``--write --read`` keeps the passes apart, an outcome never claims
completion the bytes do not show, and old footers still read."""

from __future__ import annotations

import json
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import run_cli
from probetop.probes.disk import PassTotals, WarmupSummary, format_warmup_report

fast_dir = disk_fixtures.fast_dir
DATA = Path(__file__).parent / "data"
ROW_FIELDS = {
    "pass", "outcome", "reason", "complete", "bytes", "seconds", "bw_bytes", "iops",
    "total_ios", "done_bytes", "range_bytes", "plateau",
}  # fmt: skip


def test_write_read_keeps_the_passes_apart(fast_dir: Path) -> None:
    target = fast_dir / "vol.img"
    target.write_bytes(b"\1" * (8 << 20))
    args = ["warmup", str(target), "--write", "--read", "--bs", "64k", "--iodepth", "4",
            f"--yes-destroy-data={target}", "--checkpoint", str(fast_dir / "c.json")]  # fmt: skip
    rec = fast_dir / "rec.jsonl"
    proc = run_cli([*args, "--record", str(rec), "--json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # The recording footer carries the same document (rows and total).
    footer = json.loads(rec.read_text().splitlines()[-1])
    assert footer["summaries"][f"warmup:{target}"]["passes"] == doc["passes"]
    rows = doc["passes"]
    assert [r["pass"] for r in rows] == ["write", "read"]
    for r in rows:
        assert set(r) >= ROW_FIELDS
        assert r["outcome"] == "completed" and r["reason"] is None
        assert r["bytes"] == r["done_bytes"] == r["range_bytes"] == 8 << 20
        assert r["total_ios"] == (8 << 20) // 65536
        assert r["bw_bytes"] == pytest.approx(r["bytes"] / r["seconds"], rel=0.01)
    # The total is the sum of the passes, not one pass's figures.
    assert doc["bytes"] == 16 << 20 and doc["total_ios"] == 2 * (8 << 20) // 65536
    assert doc["seconds"] == pytest.approx(sum(r["seconds"] for r in rows), abs=2e-6)
    assert doc["outcome"] == "completed" and doc["complete"] is True
    # The text report: a row per pass and the total, in fio's units.
    (fast_dir / "c.json").unlink()
    text = run_cli([*args, "--headless"])
    assert text.returncode == 0, text.stderr
    lines = {ln.split()[0]: ln for ln in text.stdout.splitlines() if ln.startswith("  ")}
    assert "8,388,608" in lines["write"] and lines["write"].endswith("completed")
    assert "8,388,608" in lines["read"] and lines["read"].endswith("completed")
    assert "16,777,216" in lines["total"] and "MiB/s (" in lines["total"]


def test_a_run_cut_by_time_says_which_pass_stopped(fast_dir: Path) -> None:
    """--time ends the write pass a third of the way in: the write row is
    "stopped" with how far it got, the read pass "not started", and the
    headline does not say "completed"."""
    target = fast_dir / "vol.img"
    target.write_bytes(b"\1" * (4 << 20))
    proc = run_cli(
        ["warmup", str(target), "--write", "--read", "--bs", "4k", "--iodepth", "1",
         "--rate-iops", "300", "--time", "1", f"--yes-destroy-data={target}",
         "--checkpoint", str(fast_dir / "c.json"), "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    write, read = doc["passes"]
    assert write["outcome"] == "stopped" and 0 < write["done_bytes"] < 4 << 20
    assert write["reason"] == f"{write['done_bytes']:,} of {4 << 20:,} bytes done"
    assert read["outcome"] == "not started" and read["bytes"] == 0
    assert doc["outcome"] == "stopped" and doc["complete"] is False
    text = format_warmup_report(doc, reason="completed")
    assert text.splitlines()[0].endswith("write+read pass, stopped"), text


def test_randwrite_reports_what_it_wrote(fast_dir: Path) -> None:
    """The pattern has no range to finish: "done: 0 of N bytes" next to
    "completed" was the bug. It shows the bytes written and its outcome."""
    target = fast_dir / "ssd.img"
    target.write_bytes(b"\0" * (8 << 20))
    proc = run_cli(
        ["warmup", str(target), "--pattern", "randwrite", f"--yes-destroy-data={target}",
         "--time", "1", "--iodepth", "1", "--headless"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "done: 0 of" not in out
    written = next(ln for ln in out.splitlines() if "written:" in ln)
    assert int(written.split()[1].replace(",", "")) > 0
    row = next(ln for ln in out.splitlines() if ln.startswith("  randwrite"))
    assert row.endswith("completed")


@pytest.mark.parametrize(
    ("name", "range_bytes", "n_bytes", "done", "ran_to_end", "error", "outcome", "reason"),
    [
        ("randwrite", 1 << 20, 0, None, True, None, "failed", "no I/O completed"),
        ("randwrite", 1 << 20, 4096, None, True, None, "completed", None),
        ("randwrite", 1 << 20, 4096, None, False, None, "stopped", "stopped before --time"),
        ("read", 1 << 20, 0, 1 << 20, False, None, "completed", None),  # done before (resume)
        ("read", 1 << 20, 4096, 4096, True, None, "stopped", "4,096 of 1,048,576 bytes done"),
        ("write", 1 << 20, 4096, 4096, False, "disk full", "failed", "disk full"),
        ("read", 0, 0, 0, True, None, "stopped", "0 of 0 bytes done"),
    ],
)
def test_the_outcome_comes_from_the_bytes_done(
    name: str,
    range_bytes: int,
    n_bytes: int,
    done: int | None,
    ran_to_end: bool,
    error: str | None,
    outcome: str,
    reason: str | None,
) -> None:
    row = PassTotals(name, range_bytes=range_bytes)
    row.add(n_bytes, n_bytes // 4096, 1.0)
    row.finish(done_bytes=done, ran_to_end=ran_to_end, error=error)
    assert (row.outcome, row.reason) == (outcome, reason)
    assert PassTotals.from_dict(row.as_dict()) == row


def test_an_old_footer_reads_as_one_pass() -> None:
    """probetop 0.1 wrote pass rows without figures: the run's are the pass's."""
    footer = json.loads((DATA / "warmup-session-0.1.jsonl").read_text().splitlines()[-1])
    doc = footer["summaries"]["warmup:w2.img"]
    s = WarmupSummary.from_dict(doc)
    (row,) = s.passes
    assert (row.pass_name, row.bytes, row.ios, row.outcome) == ("read", 67108864, 1024, "completed")
    assert s.total.bytes == doc["bytes"] and s.plateau is not None
    assert "49.6MiB/s (52.0MB/s)" in format_warmup_report(doc, reason="completed")
