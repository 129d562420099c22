"""The icmp family's descriptor: ``probetop icmp HOST`` run, reported and shown
(probes/core/family.py).

Headless, it prints what ping prints (the ``PING`` line, a line per reply
unless -q, a flood's dots, the statistics block), probetop's own lines
placed where ping's parsers do not read; ``--json`` prints one document.

Here ``--interval`` (``-i``) is ping's send interval, as ping users expect;
the sampling interval is ``--sample-interval`` (the ``SPEC`` owns the common
``--interval``, and its ``--sample-interval`` lands in the common options'
``interval_s``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import DemoContext, Family, Lazy, RunCommon, RunOutcome
from probetop.probes.icmp.pingtext import PingWriter
from probetop.probes.icmp.probe import IcmpProbe
from probetop.probes.icmp.records import KIND, IcmpInterval
from probetop.probes.icmp.report import exit_code, format_report, json_document
from probetop.probes.icmp.settings import SPEC, IcmpSettings
from probetop.probes.icmp.stream import REPLY_LOG_ROWS

DEMO_HOST = "127.0.0.1"
DEMO_RATE = 200.0
DEMO_IDLE_REASON = (
    "ICMP needs root, CAP_NET_RAW (`sudo setcap cap_net_raw+ep` on the python binary) "
    'or `sudo sysctl -w net.ipv4.ping_group_range="0 2147483647"`'
)


def read_settings(values: Mapping[str, Any], common: RunCommon) -> IcmpSettings:
    return IcmpSettings.from_options(
        values, interval_s=common.interval_s, deadline_s=common.time_limit_s
    )


def build_probes(settings: IcmpSettings, common: RunCommon) -> list[Probe]:
    """The probe; a headless text run also writes ping's live lines (the
    ``PING`` line, a line per reply unless -q, a flood's dots) as it goes."""
    listener = None
    if common.wants_headless and not common.json and not common.detach:
        listener = PingWriter(
            quiet=settings.quiet, timestamps=settings.timestamps, audible=settings.audible
        )
    return [IcmpProbe(settings, listener=listener)]


def demo_probes(ctx: DemoContext) -> list[Probe]:
    """127.0.0.1 at 200 requests/s when ICMP is allowed; otherwise an idle pane saying why."""
    demo = IcmpSettings(DEMO_HOST, rate=DEMO_RATE, size=56, interval_s=ctx.interval_s)
    if ctx.icmp_allowed:
        return [IcmpProbe(demo)]
    return [IcmpProbe(demo, idle_reason=DEMO_IDLE_REASON)]


def report(settings: IcmpSettings, common: RunCommon, result: RunOutcome) -> int:
    """ping-style text, or the JSON document (--json). Exit codes follow ping."""
    probe = next((p for p in result.probes if p.kind == KIND), None)
    if probe is None:
        return 1
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if common.json:
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
    return exit_code(
        summary, error, want_replies=settings.count if settings.counts_replies else None
    )


# --time (0 or absent: no limit, as ping without -w) is the deadline (the
# default): the probe ends itself only after --count requests.
FAMILY = Family(
    spec=SPEC,
    settings=IcmpSettings,
    read_settings=read_settings,
    build_probes=build_probes,
    report=report,
    records=lambda: (IcmpInterval,),
    panes={KIND: "probetop.tui.ui.panes.icmp:IcmpPane"},
    tracker=Lazy("probetop.probes.icmp.metrics:TRACKER"),
    checks=Lazy("probetop.probes.icmp.checks:CHECKS"),
    docs="docs/icmp.md",
    example=("127.0.0.1",),
    demo_probes=demo_probes,
)
