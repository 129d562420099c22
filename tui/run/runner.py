"""Headless runs: start probes, record, stop on time/finish/signal, report.

The probes, hub and recorder are a ``tui.run.livesession.LiveSession``, the same
object the dashboard runs them through: one lifecycle for both paths.

Contract:
- ``run_headless(probes, ...)`` runs until ``duration_s`` passes, every
  foreground probe finishes by itself, or SIGINT/SIGTERM/SIGHUP arrives; then
  it stops every probe (they clean up their workers), closes the recording
  with its footer, and returns a ``RunResult``. A signal never loses data.
- A write error that stops the recording is printed on stderr when it
  happens; the probes go on and ``RunResult.recording_failures`` has it.
- ``echo`` (optional) is called once the probes have started
  (``echo.started()``) and with each of their samples in arrival order,
  those drained at the end included (``echo.sample(s)``): a family's
  ``LiveText`` printed as the run goes.
- Probes with a true ``background`` attribute (the passive system probes) do
  not keep a run alive on their own.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from probetop.probes.core import stopsignals
from probetop.probes.core.base import Probe
from probetop.probes.core.sample import Sample, SeriesEnded, now_ns, split_key
from probetop.probes.core.series import GONE_AFTER_S
from probetop.probes.core.stats import RunningStats
from probetop.tui.run.livesession import LiveSession

if TYPE_CHECKING:
    from probetop.probes.record import FooterFields
    from probetop.tui.metrics.live import MetricsExporter


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
    # Recordings a write error stopped (already said on stderr when it happened).
    recording_failures: list[str] = field(default_factory=list)
    # Per probe, the entities (NICs, disks) that vanished: still in ``stats``,
    # shown as gone; and how many were forgotten to bound memory (Entities).
    gone: dict[str, set[str]] = field(default_factory=dict)
    forgotten: dict[str, int] = field(default_factory=dict)
    # The family's LiveText went to stdout as the run went (launch sets it).
    live_printed: bool = False

    @property
    def interrupted(self) -> bool:
        return self.reason.startswith("interrupted")

    @property
    def signal_status(self) -> int:
        """The exit status the stop signal means (128 + its number: 130 for
        SIGINT, 143 for SIGTERM, 129 for SIGHUP), 0 when no signal stopped
        the run. The same status as a signal during start-up gives."""
        if not self.interrupted:
            return 0
        return stopsignals.status_of(self.reason.removeprefix("interrupted (").rstrip(")"))


class Echo(Protocol):
    """What ``run_headless`` tells as the run goes (``tui.run.liveecho``)."""

    def started(self) -> None: ...
    def sample(self, sample: Sample) -> None: ...


async def run_headless(
    probes: list[Probe],
    *,
    duration_s: float | None = None,
    record: Path | None = None,
    command: list[str] | None = None,
    keep_samples: bool = True,
    footer_fields: FooterFields | None = None,
    metrics: MetricsExporter | None = None,
    echo: Echo | None = None,
) -> RunResult:
    """Run probes without a UI. See the module docstring. ``metrics``: an
    opened ``--metrics``/``--textfile`` exporter the session feeds."""
    session = LiveSession(
        probes,
        record=record,
        command=command or [],
        notify=_stderr_notify,
        footer_fields=footer_fields,
        metrics=metrics,
    )
    collect = await session.start(lossless=True, strict=True)
    hub = session.hub
    if echo is not None:
        echo.started()
    stop = asyncio.Event()
    reason = "completed"
    loop = asyncio.get_running_loop()

    def on_signal(signame: str) -> None:
        nonlocal reason
        reason = f"interrupted ({signame})"
        stop.set()
        collect.wake()  # end the wait now, not at its next 0.25 s poll

    session.install_signal_handlers(on_signal)
    if (early := stopsignals.pending()) is not None:  # sent during start-up
        on_signal(early)
    samples: dict[str, list[Sample]] = {p.id: [] for p in probes}
    stats: dict[str, dict[str, RunningStats]] = {p.id: {} for p in probes}
    entities = Entities(stats)
    foreground = [p.id for p in probes if not getattr(p, "background", False)]
    t0 = now_ns()
    next_forget = t0
    try:
        deadline = None if duration_s is None else loop.time() + duration_s
        while not stop.is_set():
            timeout = 0.25 if deadline is None else max(0.0, min(0.25, deadline - loop.time()))
            for record_ in await collect.wait(timeout=timeout):
                if isinstance(record_, Sample):
                    if echo is not None:
                        echo.sample(record_)
                    if keep_samples:
                        samples.setdefault(record_.probe, []).append(record_)
                    per = stats.setdefault(record_.probe, {})
                    for key, value in record_.values.items():
                        if value is not None:
                            per.setdefault(key, RunningStats()).add(float(value))
                    entities.seen(record_, now_ns())
                elif isinstance(record_, SeriesEnded):
                    entities.ended(record_)
            if now_ns() >= next_forget:
                entities.forget_oldest(now_ns())
                next_forget = now_ns() + 60_000_000_000
            if deadline is not None and loop.time() >= deadline:
                reason = "time"
                break
            if foreground and not any(pid in session.running() for pid in foreground):
                break
    finally:
        await hub.stop()
        for record_ in collect.drain():
            if isinstance(record_, Sample) and echo is not None:
                echo.sample(record_)  # a run's last interval often comes here
            if isinstance(record_, Sample) and keep_samples:
                samples.setdefault(record_.probe, []).append(record_)
        await session.shutdown(reason)
        # Spared before the loop's handlers go: a second Ctrl-C landing
        # between the two raised KeyboardInterrupt and lost the report
        # (exit 130, seen in CI with a 2 ms gap).
        stopsignals.spare_report()
        session.remove_signal_handlers()
    return RunResult(
        probes=probes,
        summaries=dict(hub.summaries),
        errors=dict(hub.errors),
        samples=samples,
        duration_s=(now_ns() - t0) / 1e9,
        reason=reason,
        stats=stats,
        recording_failures=list(session.recording_failures),
        gone={p.id: entities.gone(p.id, now_ns()) for p in probes},
        forgotten=dict(entities.forgotten),
    )


KEEP_GONE = 32  # vanished entities kept per probe (their rows, marked gone)


class Entities:
    """When each entity (the part after ``@`` in a values key: a NIC, a
    disk) of each probe was last in a sample, so the report marks the ones
    that vanished and memory stays bounded on a host whose veths and loop
    devices come and go all day: past ``KEEP_GONE`` vanished entities, the
    longest gone are dropped from ``stats`` and only counted. An entity is
    gone once the hub ended its series (``ended``: a detached loop device at
    once) or after ``GONE_AFTER_S`` without a sample, until it comes back."""

    def __init__(self, stats: dict[str, dict[str, RunningStats]]) -> None:
        self.stats = stats
        self.last_ns: dict[str, dict[str, int]] = {}
        self.forgotten: dict[str, int] = {}
        self._ended: dict[str, set[str]] = {}

    def seen(self, sample: Sample, t_ns: int) -> None:
        last = self.last_ns.setdefault(sample.probe, {})
        ended = self._ended.get(sample.probe)
        for key in sample.values:
            entity = split_key(key)[1]
            if entity is not None:
                last[entity] = t_ns
                if ended:
                    ended.discard(entity)  # back again: a new series

    def ended(self, record: SeriesEnded) -> None:
        """The hub ended ``record.entity``'s series: gone from now on."""
        if record.entity in self.last_ns.get(record.probe, {}):
            self._ended.setdefault(record.probe, set()).add(record.entity)

    def gone(self, probe: str, t_ns: int) -> set[str]:
        cutoff = t_ns - int(GONE_AFTER_S * 1e9)
        ended = self._ended.get(probe, set())
        return {e for e, t in self.last_ns.get(probe, {}).items() if t < cutoff or e in ended}

    def forget_oldest(self, t_ns: int) -> None:
        for probe, last in self.last_ns.items():
            gone = sorted(self.gone(probe, t_ns), key=last.__getitem__)
            drop = set(gone[: max(0, len(gone) - KEEP_GONE)])
            if not drop:
                continue
            per = self.stats.get(probe, {})
            for key in [k for k in per if split_key(k)[1] in drop]:
                del per[key]
            for entity in drop:
                del last[entity]
                self._ended.get(probe, set()).discard(entity)
            self.forgotten[probe] = self.forgotten.get(probe, 0) + len(drop)


def _stderr_notify(message: str, *, title: str = "", severity: str = "information") -> None:
    """Headless: what the dashboard would show as an error or a warning goes
    to stderr at once (a recording that stopped); information stays quiet."""
    if severity in ("error", "warning"):
        print(f"probetop: warning: {message}", file=sys.stderr, flush=True)


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}"


REPORT_WIDTH = 80  # cells: every text report fits a classic terminal


def stats_table(
    rows: list[tuple[str, list[str], str]],
    heads: list[str],
    indent: str = "   ",
    width: int = REPORT_WIDTH,
) -> str:
    """Lines of ``name  cell cell ...  unit``, every column as wide as its
    longest cell, so long ``metric@entity`` names never push a row out of
    line. Within ``width`` cells: a name too long for the room the numbers
    leave gets a line of its own, its numbers on the next, under the columns
    (``metric@entity`` names made the report's rows 88 cells wide)."""
    widths = [
        max([len(h), *(len(cells[i]) for _n, cells, _u in rows)]) for i, h in enumerate(heads)
    ]
    unit_w = max([len("unit"), *(len(unit) for _n, _c, unit in rows)])
    room = width - len(indent) - sum(2 + w for w in widths) - 2 - unit_w
    longest = max([len("metric"), *(len(name) for name, _cells, _unit in rows)])
    name_w = max(len("metric"), min(longest, room))
    lines = [
        f"{indent}{'metric':<{name_w}}"
        + "".join(f"  {h:>{w}}" for h, w in zip(heads, widths, strict=True))
        + "  unit"
    ]
    for name, cells, unit in rows:
        if len(name) > name_w:
            lines.append(f"{indent}{name}")
            name = ""
        line = f"{indent}{name:<{name_w}}" + "".join(
            f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True)
        )
        lines.append(f"{line}  {unit}".rstrip())
    return "\n".join(lines) + "\n"


def wrap_words(
    head: str, words: list[str], width: int = REPORT_WIDTH, sep: str = " ", cont: str = ""
) -> str:
    """``head`` then ``words`` parted by ``sep``, as lines of at most
    ``width`` cells (a word longer than a line keeps one of its own), the
    lines after the first indented under the first word, every line but the
    last ending in ``cont`` (" \\": a command that still pastes whole)."""
    pieces = [w + sep.rstrip() for w in words[:-1]] + words[-1:]
    indent = " " * len(head)
    lines: list[str] = []
    line, filled = head, False
    for piece in pieces:
        if filled and len(line) + 1 + len(piece) + len(cont) > width:
            lines.append(line + cont)
            line, filled = indent, False
        line += (" " if filled else "") + piece
        filled = True
    lines.append(line)
    return "\n".join(lines)


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
        idle = result.summaries.get(probe.id, {}).get("idle_reason")
        if idle:  # the demo's ICMP without the privilege: say why, not an empty section
            out.write(f"   idle: {idle}\n")
        units = {m.name: m.unit for m in probe.metrics}
        per = result.stats.get(probe.id, {})
        gone = result.gone.get(probe.id, set())
        rows = [
            (
                key + (" (gone)" if split_key(key)[1] in gone else ""),
                [_fmt(per[key].min), _fmt(per[key].mean), _fmt(per[key].max)],
                units.get(split_key(key)[0], ""),
            )
            for key in sorted(per)
        ]
        if rows:
            out.write(stats_table(rows, ["min", "mean", "max"]))
        if result.forgotten.get(probe.id):
            out.write(
                f"   and {result.forgotten[probe.id]} more devices that came and went "
                f"(only the last {KEEP_GONE} gone are kept)\n"
            )
    return 1 if result.errors else 0
