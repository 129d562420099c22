"""The disk commands' headless reports: fio-like text, or one JSON document.

Contract:
- The JSON documents are the probes' ``summary()`` (fio's shape for IOPS, the
  warm-up's fields in docs/warmup.md) plus ``error`` when the run failed:
  ``iops_document`` / ``warmup_document``.
- ``format_iops_report`` / ``format_warmup_report`` turn the same document into
  the text report (no trailing newline). A run stopped before it measured
  (during the file's layout) says how far the layout got and what was undone.
- ``iops_exit_code`` / ``warmup_exit_code``: 2 when the probe failed; for the
  warm-up 1 when ``--verify`` found bad sectors; else 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def iops_document(summary: Mapping[str, Any], error: str | None) -> dict[str, Any]:
    """The IOPS run's JSON document: the summary, and ``error`` if it failed."""
    doc = dict(summary)
    if error:
        doc["error"] = error
    return doc


def _direction_lines(name: str, d: Mapping[str, Any]) -> list[str]:
    clat = d["clat_ns"]
    pct = clat["percentile"]
    lines = [
        f"  {name}: IOPS={d['iops']:,.0f}, BW={d['bw_bytes'] / 1e6:,.1f}MB/s "
        f"({d['io_bytes'] / 1e6:,.1f}MB/{d['runtime_ms']}msec), ios={d['total_ios']}"
        + (f", errors={d['errors']}" if d.get("errors") else ""),
        f"    clat (usec): min={clat['min'] / 1e3:.2f}, max={clat['max'] / 1e3:.2f}, "
        f"avg={clat['mean'] / 1e3:.2f}, stdev={clat['stddev'] / 1e3:.2f}",
    ]
    if pct:
        cells = [f"{float(k):g}th={v / 1e3:.1f}" for k, v in pct.items()]
        lines.append("    clat percentiles (usec): " + ", ".join(cells[:9]))
        lines.append("                             " + ", ".join(cells[9:]))
    return lines


def format_iops_report(
    doc: Mapping[str, Any], *, target: str, reason: str, duration_s: float
) -> str:
    """fio-like text: one block per direction the pattern does, and fio's command."""
    out = [f"probetop iops {target}: {reason}, {duration_s:.1f} s"]
    out += [f"  note: {n}" for n in doc.get("notes", [])]
    layout = doc.get("layout")
    if layout:
        out.append(
            f"  layout {layout.get('state')}: {layout.get('bytes', 0):,} of "
            f"{layout.get('total_bytes', 0):,} bytes written"
            + (f"; {layout['undone']}" if layout.get("undone") else "")
            + "; nothing was measured"
        )
    params = doc.get("params", {})
    if params.get("rw") not in ("write", "randwrite") and "read" in doc:
        out += _direction_lines("read", doc["read"])
    if params.get("rw") not in ("read", "randread") and "write" in doc:
        out += _direction_lines("write", doc["write"])
    out.append(f"  same job in fio: {doc.get('fio_command')}")
    if doc.get("error"):
        out.append(f"  error: {doc['error']}")
    return "\n".join(out)


def iops_exit_code(error: str | None) -> int:
    return 2 if error else 0


def warmup_document(summary: Mapping[str, Any], error: str | None) -> dict[str, Any]:
    """The warm-up's JSON document: the summary, and ``error`` if it failed
    (the probe's own message, naming the checkpoint, wins)."""
    doc = dict(summary)
    if error and not doc.get("error"):
        doc["error"] = error
    return doc


def format_warmup_report(doc: Mapping[str, Any], *, reason: str) -> str:
    """Text: progress, this run's rate, plateau, verify, checkpoint, fio's command."""
    total = doc.get("total_bytes") or 0
    done = doc.get("done_bytes") or 0
    pct = 100.0 * done / total if total else 0.0
    plateau = doc.get("plateau", {})
    lines = [
        f"probetop warmup {doc.get('target')}: {doc.get('pass')} pass, {reason}",
        f"  done: {done:,} of {total:,} bytes ({pct:.1f} %), complete: {doc.get('complete')}",
        f"  this run: {doc.get('bytes', 0):,} bytes in {doc.get('seconds', 0):.1f} s, "
        f"{doc.get('bw_bytes', 0) / 1e6:,.1f} MB/s, {doc.get('iops', 0):,.0f} IOPS",
    ]
    if doc.get("resumed_from") is not None:
        lines.append(f"  resumed from {doc['resumed_from']:,} bytes done")
    if plateau.get("reached_at_s") is not None:
        lines.append(
            f"  plateau ({plateau['criterion']}): reached at {plateau['reached_at_s']:.0f} s "
            f"after {plateau['reached_at_bytes']:,} bytes"
            + (f", left at {plateau['left_at_s']:.0f} s" if plateau.get("left_at_s") else "")
        )
    else:
        lines.append(f"  plateau ({plateau.get('criterion')}): not reached")
    if "verify" in doc:
        v = doc["verify"]
        lines.append(f"  verify: {v['bad_sectors']} bad sectors" + (" (ok)" if v["ok"] else ""))
    for note in doc.get("notes", []):
        lines.append(f"  note: {note}")
    if doc.get("checkpoint"):
        lines.append(f"  checkpoint: {doc['checkpoint']}")
    lines.append(f"  same pass in fio: {doc.get('fio_command')}")
    if doc.get("error"):
        lines.append(f"  error: {doc['error']}")
    return "\n".join(lines)


def warmup_exit_code(doc: Mapping[str, Any], error: str | None) -> int:
    if error:
        return 2
    verify = doc.get("verify")
    return 1 if verify and verify["bad_sectors"] else 0
