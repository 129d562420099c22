"""`probetop icmp HOST`: ICMP echo like ping (default), ping -f (--flood) or hping3 -i (--rate).

Headless, it prints what ping prints (the ``PING`` line, a line per reply
unless -q, a flood's dots, the statistics block), probetop's own lines
placed where ping's parsers do not read; ``--json`` prints one document.

Here ``--interval`` (``-i``) is ping's send interval, as ping users expect;
the sampling interval is ``--sample-interval`` (the family's ``SPEC`` owns the
common ``--interval``, and its ``--sample-interval`` lands in the plan's
``common.interval_s``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetop.probes import icmp
from probetop.probes.core.base import Probe
from probetop.probes.icmp import (
    KIND,
    REPLY_LOG_ROWS,
    IcmpProbe,
    IcmpSettings,
    PingWriter,
    exit_code,
    format_report,
    json_document,
)
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import RunResult

if TYPE_CHECKING:
    from probetop.tui.run.demo_targets import DemoTargets

SPEC = icmp.SPEC  # the family declares the options; this module runs them
FOCUS = KIND

DEMO_HOST = "127.0.0.1"
DEMO_RATE = 200.0
DEMO_IDLE_REASON = (
    "ICMP needs root, CAP_NET_RAW (`sudo setcap cap_net_raw+ep` on the python binary) "
    'or `sudo sysctl -w net.ipv4.ping_group_range="0 2147483647"`'
)


def settings(values: Mapping[str, Any], common: CommonOptions) -> IcmpSettings:
    return IcmpSettings.from_options(values, interval_s=common.interval_s)


def build_probes(plan: RunPlan[IcmpSettings]) -> list[Probe]:
    """The probe; a headless text run also writes ping's live lines (the
    ``PING`` line, a line per reply unless -q, a flood's dots) as it goes."""
    listener = None
    if plan.common.wants_headless and not plan.common.json and not plan.common.detach:
        listener = PingWriter(quiet=plan.settings.quiet, timestamps=plan.settings.timestamps)
    return [IcmpProbe(plan.settings, listener=listener)]


def deadline_s(plan: RunPlan[IcmpSettings]) -> float | None:
    """--time (0 or absent: no limit, as ping without -w): the probe ends
    itself only after --count requests."""
    return plan.common.time_limit_s


def demo_probes(ctx: DemoTargets) -> list[Probe]:
    """127.0.0.1 at 200 requests/s when ICMP is allowed; otherwise an idle pane saying why."""
    demo = IcmpSettings(DEMO_HOST, rate=DEMO_RATE, size=56, interval_s=ctx.interval_s)
    if ctx.icmp_allowed:
        return [IcmpProbe(demo)]
    return [IcmpProbe(demo, idle_reason=DEMO_IDLE_REASON)]


def report(plan: RunPlan[IcmpSettings], result: RunResult) -> int:
    """ping-style text, or the JSON document (--json). Exit codes follow ping."""
    probe = next((p for p in result.probes if p.kind == KIND), None)
    if probe is None:
        return 1
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if plan.common.json:
        doc = json_document(probe.id, summary, reason=result.reason, error=error)
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        writer = probe.listener if isinstance(probe, IcmpProbe) else None
        started = isinstance(writer, PingWriter) and bool(writer.source)
        notes = []
        if isinstance(writer, PingWriter) and writer.dropped:
            notes.append(
                f"{writer.dropped} reply lines not shown (over {REPLY_LOG_ROWS} a stream "
                "in one interval: use -q at this rate)"
            )
        sys.stdout.write(format_report(summary, error=error, header=not started, notes=notes))
    return exit_code(summary, error)
