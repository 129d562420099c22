"""`probetop icmp HOST`: ICMP echo like ping (default), ping -f (--flood) or hping3 -i (--rate).

Here ``--interval`` (``-i``) is ping's send interval, as the issue and ping
users expect; the sampling interval is ``--sample-interval`` (``OWN_OPTIONS``
tells cli.py not to add the common ``--interval``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.icmp.probe import IcmpOptions, IcmpProbe
from probetop.tui.argtypes import number, whole_number

NAME = "icmp"
# --interval is ping's send interval here, not the common sampling interval.
OWN_OPTIONS = ("--interval",)
HELP = "ICMP echo: requests/s, replies/s, pps, loss, RTT percentiles (ping -f, hping3)"
DESCRIPTION = """\
Send ICMP echo requests to HOST and show, per interval, requests/s, replies/s,
packets/s through the target (2 x replies/s), loss (a request in flight is
never lost before the grace period), duplicates, reordering, RTT
min/avg/max/mdev/p50/p90/p99 and ICMP errors with the reporting router.

Default: one request per second, like ping. --flood sends a new request as
each reply arrives (ping -f); --rate sends at a fixed rate regardless of
replies (hping3 -i u...). Rates above 100/s need --flood or an explicit --rate.
"""
EPILOG = """\
examples:
  probetop icmp 127.0.0.1                           one request per second
  probetop icmp --flood --size 1 --time 5 --json 127.0.0.1
  probetop icmp --rate 50000 --time 10 ::1          fixed 50k requests/s
  probetop icmp --flood --streams 2 --headless --time 5 127.0.0.1

privileges: a datagram ICMP socket when net.ipv4.ping_group_range allows your
group, else a raw socket (root or `sudo setcap cap_net_raw+ep $(realpath $(which python3))`).
"""
FOCUS = "icmp"

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$")
_SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}


def duration(text: str) -> float:
    """Seconds from '0.2', '200ms', '20us', '1s'."""
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 0.2, 200ms, 20us)")
    value = float(m.group(1)) * _SCALE[m.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the send interval must be positive, got {text}")
    return value


_count = whole_number(minimum=0)
_rate = number(positive=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", metavar="HOST", help="name or address to send echo requests to")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument(
        "--flood",
        action="store_true",
        help="send a new request as each reply arrives (ping -f), or every 10 ms without one",
    )
    pace.add_argument(
        "--rate", type=_rate, metavar="PPS", help="fixed requests/s regardless of replies (hping3)"
    )
    pace.add_argument(
        "-i",
        "--interval",
        "--send-interval",
        type=duration,
        metavar="DURATION",
        dest="send_interval",
        help="time between requests, as ping -i (0.2, 200ms, 20us); default 1 s",
    )
    parser.add_argument(
        "--sample-interval",
        type=number(positive=True),
        metavar="S",
        dest="interval",
        default=argparse.SUPPRESS,
        help="sampling interval in seconds (default 1); --interval here is ping's send interval",
    )
    parser.add_argument(
        "-s", "--size", type=_count, default=56, metavar="BYTES",
        help="ICMP payload bytes, as ping -s (default 56)",
    )  # fmt: skip
    parser.add_argument(
        "--streams", type=_count, default=1, metavar="N",
        help="independent senders, each with its own socket and thread (default 1)",
    )  # fmt: skip
    parser.add_argument("-c", "--count", type=_count, metavar="N", help="stop after N requests")
    parser.add_argument("-t", "--ttl", type=_count, metavar="N", help="IP TTL / hop limit")
    fam = parser.add_mutually_exclusive_group()
    fam.add_argument("-4", dest="family", action="store_const", const=4, help="IPv4 only")
    fam.add_argument("-6", dest="family", action="store_const", const=6, help="IPv6 only")
    parser.add_argument("--source", metavar="ADDR", help="source address (one of this host's)")
    parser.add_argument(
        "--broadcast", action="store_true", help="allow a broadcast or multicast target"
    )
    parser.add_argument(
        "-l", "--preload", type=_count, default=1, metavar="N",
        help="flood: requests kept outstanding per stream, as ping -l (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--grace", type=number(), default=1.0, metavar="S",
        help="a request unanswered this long is lost; Ctrl-C waits this long (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--socket", choices=("auto", "raw", "datagram"), default="auto", dest="socket_mode",
        help="socket kind (default: datagram where allowed, else raw)",
    )  # fmt: skip


def options_from_args(args: argparse.Namespace) -> IcmpOptions:
    """Check the safety rules and build the probe options."""
    # Rates above UNSOLICITED_MAX_PPS are opt-in: the default is 1/s, and --flood,
    # --rate and -i are each an explicit choice of rate.
    period = args.send_interval
    opts = IcmpOptions(
        host=args.host,
        flood=bool(args.flood),
        rate=args.rate,
        period_s=period,
        size=args.size,
        streams=args.streams,
        count=args.count,
        ttl=args.ttl,
        family=args.family,
        source=args.source,
        broadcast=bool(args.broadcast),
        preload=args.preload,
        grace_s=args.grace,
        socket_mode=args.socket_mode,
        interval_s=getattr(args, "interval", 1.0) or 1.0,
    )
    if opts.preload > 1 and not opts.flood:
        raise UsageProbeError("--preload only applies to --flood")
    opts.validate()
    return opts


def build_probes(args: argparse.Namespace) -> list[Probe]:
    return [IcmpProbe(options_from_args(args))]


def demo_probes(ctx: Any) -> list[Probe]:
    """127.0.0.1 at 200 requests/s when ICMP is allowed; otherwise an idle pane saying why."""
    opts = IcmpOptions(
        host="127.0.0.1", rate=200.0, size=56, interval_s=float(getattr(ctx, "interval_s", 1.0))
    )
    if getattr(ctx, "icmp_allowed", False):
        return [IcmpProbe(opts)]
    reason = (
        "ICMP needs root, CAP_NET_RAW (`sudo setcap cap_net_raw+ep` on the python binary) "
        'or `sudo sysctl -w net.ipv4.ping_group_range="0 2147483647"`'
    )
    return [IcmpProbe(opts, idle_reason=reason)]


def _us(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def report(args: argparse.Namespace, result: Any) -> int:
    """ping-style text, or the JSON document (--json)."""
    probe = next((p for p in result.probes if p.kind == "icmp"), None)
    if probe is None:
        return 1
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if getattr(args, "json", False):
        doc = {"probe": probe.id, **summary, "reason": result.reason, "error": error}
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        out = sys.stdout
        out.write(
            f"--- {summary.get('target')} ({summary.get('address')}) probetop icmp statistics: "
            f"{summary.get('mode')} socket, {summary.get('pacing')} ---\n"
        )
        if error:
            out.write(f"error: {error}\n")
        if "sent" in summary:
            loss = summary.get("loss_pct")
            out.write(
                f"{summary['sent']} requests sent, {summary['received']} replies received, "
                f"{summary['duplicates']} duplicates, {summary['reordered']} reordered, "
                f"{summary['lost']} lost"
                f" ({'-' if loss is None else f'{loss:.3f}'}% loss), {summary['late']} late, "
                f"time {summary['duration_s']:.2f} s\n"
            )
            rps = summary.get("replies_per_second")
            if rps is not None:
                out.write(
                    f"{rps:,.0f} replies/s, {summary['pps']:,.0f} packets/s through the target\n"
                )
            r = summary.get("rtt_us", {})
            out.write(
                f"rtt min/avg/max/mdev = {_us(r.get('min'))}/{_us(r.get('avg'))}/"
                f"{_us(r.get('max'))}/{_us(r.get('mdev'))} µs, p50/p90/p99 = "
                f"{_us(r.get('p50'))}/{_us(r.get('p90'))}/{_us(r.get('p99'))} µs\n"
            )
            for name, n in (summary.get("errors") or {}).items():
                routers = (summary.get("error_routers") or {}).get(name)
                where = f" from {', '.join(sorted(routers))}" if routers else ""
                out.write(f"error: {name}: {n}{where}\n")
        out.write(f"equivalent: {summary.get('reference_command')}\n")
    if error:
        return 1
    return 1 if summary.get("sent") and not summary.get("received") else 0
