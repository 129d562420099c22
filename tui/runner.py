"""Headless runs: start probes, record, stop on time/finish/signal, report.

Contract:
- ``run_headless(probes, ...)`` runs until ``duration_s`` passes, every
  foreground probe finishes by itself, or SIGINT/SIGTERM/SIGHUP arrives; then
  it stops every probe (they clean up their workers), closes the recording
  with its footer, and returns a ``RunResult``. A signal never loses data.
- Probes with a true ``background`` attribute (the passive system probes) do
  not keep a run alive on their own.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probetop.probes.core.base import Probe
from probetop.probes.core.hub import Hub
from probetop.probes.core.sample import Sample, now_ns, split_key
from probetop.probes.core.stats import RunningStats
from probetop.probes.record.writer import Recorder


@dataclass
class RunResult:
    """What a headless run produced."""

    probes: list[Probe]
    summaries: dict[str, Mapping[str, Any]]
    errors: dict[str, str]
    samples: dict[str, list[Sample]]
    duration_s: float
    reason: str  # "completed", "time", "interrupted (SIGINT)", ...
    stats: dict[str, dict[str, RunningStats]] = field(default_factory=dict)

    @property
    def interrupted(self) -> bool:
        return self.reason.startswith("interrupted")


async def run_headless(
    probes: list[Probe],
    *,
    duration_s: float | None = None,
    record: Path | None = None,
    command: list[str] | None = None,
    keep_samples: bool = True,
) -> RunResult:
    """Run probes without a UI. See the module docstring."""
    hub = Hub()
    for probe in probes:
        hub.add(probe)
    recorder = Recorder(record, hub, command or []) if record else None
    if recorder:
        await recorder.start()
    collect = hub.subscribe(lossless=True)
    stop = asyncio.Event()
    reason = "completed"
    loop = asyncio.get_running_loop()

    def on_signal(signame: str) -> None:
        nonlocal reason
        reason = f"interrupted ({signame})"
        stop.set()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, on_signal, sig.name)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    samples: dict[str, list[Sample]] = {p.id: [] for p in probes}
    stats: dict[str, dict[str, RunningStats]] = {p.id: {} for p in probes}
    foreground = [p.id for p in probes if not getattr(p, "background", False)]
    t0 = now_ns()
    hub.start()
    try:
        deadline = None if duration_s is None else loop.time() + duration_s
        while not stop.is_set():
            timeout = 0.25 if deadline is None else max(0.0, min(0.25, deadline - loop.time()))
            for record_ in await collect.wait(timeout=timeout):
                if isinstance(record_, Sample):
                    if keep_samples:
                        samples.setdefault(record_.probe, []).append(record_)
                    per = stats.setdefault(record_.probe, {})
                    for key, value in record_.values.items():
                        if value is not None:
                            per.setdefault(key, RunningStats()).add(float(value))
            if deadline is not None and loop.time() >= deadline:
                reason = "time"
                break
            if foreground and not any(pid in hub.running() for pid in foreground):
                break
    finally:
        await hub.stop()
        for record_ in collect.drain():
            if isinstance(record_, Sample) and keep_samples:
                samples.setdefault(record_.probe, []).append(record_)
        if recorder:
            await recorder.close(reason)
        for sig in installed:
            loop.remove_signal_handler(sig)
    return RunResult(
        probes=probes,
        summaries=dict(hub.summaries),
        errors=dict(hub.errors),
        samples=samples,
        duration_s=(now_ns() - t0) / 1e9,
        reason=reason,
        stats=stats,
    )


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}"


def generic_report(result: RunResult, as_json: bool = False, out: Any = None) -> int:
    """Per probe: summary, and min/mean/max of every metric. Exit 0, or 1 on probe errors."""
    out = out or sys.stdout
    if as_json:
        doc = {
            "duration_s": round(result.duration_s, 3),
            "reason": result.reason,
            "probes": {
                p.id: {
                    "kind": p.kind,
                    "summary": result.summaries.get(p.id, {}),
                    "metrics": {k: s.as_dict() for k, s in result.stats.get(p.id, {}).items()},
                    "error": result.errors.get(p.id),
                }
                for p in result.probes
            },
        }
        json.dump(doc, out, indent=2, default=str)
        out.write("\n")
        return 1 if result.errors else 0
    out.write(f"probetop: ran {result.duration_s:.1f} s ({result.reason})\n")
    for probe in result.probes:
        out.write(f"\n== {probe.id} ({probe.kind})\n")
        if probe.id in result.errors:
            out.write(f"   error: {result.errors[probe.id]}\n")
        units = {m.name: m.unit for m in probe.metrics}
        per = result.stats.get(probe.id, {})
        if per:
            out.write(f"   {'metric':<28} {'min':>12} {'mean':>12} {'max':>12}  unit\n")
        for key in sorted(per):
            s = per[key]
            unit = units.get(split_key(key)[0], "")
            out.write(
                f"   {key:<28} {_fmt(s.min):>12} {_fmt(s.mean):>12} {_fmt(s.max):>12}  {unit}\n"
            )
    return 1 if result.errors else 0
