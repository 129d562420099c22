"""The ICMP family's options (one declarative spec) and its frozen settings.

Contract:
- ``SPEC`` is what ``probetop icmp`` accepts; the CLI, the add-probe prompt and
  docs/icmp.md all read it. Here ``--interval`` (``-i``) is ping's send
  interval, so the spec owns that common option (``own_common``); the
  sampling interval is ``--sample-interval``, which lands where the common
  ``--interval`` does (``probetop --interval S icmp HOST`` sets it too).
- ``IcmpSettings`` is what one ICMP probe runs with. ``from_options`` builds
  it from parsed option values and the sampling interval; ``validate`` raises
  ``UsageProbeError`` for contradictions and out-of-range values, with a
  message that names the option.
- ``reference_command`` is the equivalent ping (flood, or up to 100/s) or
  hping3 (faster fixed rates, IPv4) command line.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.machine import UnitCost, check_busy_workers, check_capacity
from probetop.probes.core.options import (
    CommandSpec,
    Option,
    OptionValueError,
    Spelling,
    Unsupported,
    byte_size,
    duration,
    number,
    whole_number,
)
from probetop.probes.core.ranges import INT64_MAX, MIN_INTERVAL_S, check_interval, check_whole

DEFAULT_PERIOD_S = 1.0
MAX_RATE = 10_000_000.0  # requests/s over all streams
MIN_RATE = 1.0 / 3600  # one request an hour (the longest -i)
MAX_STREAMS = 64
STREAM_STACK_BYTES = 512 * 1024
# What one stream costs the machine: its thread (512 KiB stack), its socket,
# the loop's 65536-slot sequence table (576 KiB), two interval array sets,
# the socket's buffers and the kernel's task (measured ~1.3 MiB; budgeted 2).
STREAM_COST = UnitCost(
    "stream",
    tasks=1,
    files=1,
    resident_bytes=2 * 1024 * 1024,
    reserved_bytes=STREAM_STACK_BYTES + 4096,
    detail="sequence table, interval arrays, socket buffers, thread stack",
)
# Merging one stream's interval into the sample (numpy adds, error tables):
# ~70 us measured, budgeted 150 us and kept under TICK_SHARE of the event loop.
TICK_COST_PER_STREAM_S = 150e-6
TICK_SHARE = 0.05
# A paced stream this fast waits by spinning (engine.SPIN_NS): as busy as a flood.
BUSY_STREAM_RATE = 10_000.0
# On stop (Ctrl-C, --time), replies still in flight are awaited this long at
# most (less with a shorter --grace); what is still unanswered then is
# reported in flight, never lost. Keeps signal-to-exit under 2 s.
STOP_DRAIN_S = 0.5


def sample_interval_floor_s(streams: int) -> float:
    """The shortest sampling interval ``streams`` streams can keep."""
    return max(MIN_INTERVAL_S, streams * TICK_COST_PER_STREAM_S / TICK_SHARE)


UNSOLICITED_MAX_PPS = 100.0  # above this, --flood or an explicit --rate is required
MAX_SIZE = 65507  # largest ICMP payload in one IPv4 datagram
SOCKET_MODES = ("auto", "raw", "datagram")
# ping -M's words (iputils 20221126 takes these three); IP_MTU_DISCOVER's
# value (and IPV6_MTU_DISCOVER's) is the index: IP_PMTUDISC_DONT, _WANT, _DO.
PMTUDISC_MODES = ("dont", "want", "do")

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


def send_interval(text: str) -> float:
    """ping's -i (``0.2``, or ``200ms``, ``20us``) or hping3's ``-i uN`` (N µs).

    A plain number is in whole ms, as ping's ``(int)(optval * 1000)``:
    ``0.0015`` is 1 ms and anything below 1 ms is 0; ``1500us`` is exact.
    ``0`` is ping's ``-i 0``: requests paced by the replies, as a flood
    (iputils sends the next request as a reply comes, or after 10 ms without
    one), with per-reply lines rather than dots. Anything else is refused
    (OptionValueError): iputils 20221126 reads trailing garbage with a
    warning that it "will become fatal error in the future"; here it is,
    as for every other duration option."""
    stripped = text.strip()
    if stripped[:1] in ("u", "U") and stripped[1:].strip().isdigit():
        micros = int(stripped[1:])
        if micros <= 0:
            raise OptionValueError(f"must be a positive duration, got {text}")
        return micros * 1e-6
    value = _duration(text)
    if _PLAIN.match(text):
        # ping's (int)(optval * 1000): whole ms, 0.0015 is 1 ms, below 1 ms is 0
        return int(value * 1000) / 1000 if value * 1000 < 2**63 else value
    return value


_duration = duration()
# A plain number, as ping's -i takes it (no unit: probetop's 200ms/20us are exact).
_PLAIN = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$")


def linger_time(text: str) -> float:
    """ping's -W: a duration (``1``, ``500ms``); the range (0.001..60 s) is
    checked with the other settings. Garbage is refused, as for -i."""
    return _duration(text)


# Range rules live in IcmpSettings.validate (some need the other options);
# the parsers only check "a whole number >= 0" / "a number" / "a duration".
_count = whole_number(minimum=0)
# ping's exit status for a value it refuses (iputils strtol_or_err: -c, -s, -w,
# -l, -t, -S, -m) and for no destination; its other usage errors exit 2.
PING_VALUE_EXIT = 1

PING_UNSUPPORTED = Unsupported(
    "ping",
    "icmp",
    (
        (("-B",), False, "the kernel picks each request's source; -I ADDR fixes one"),
        (("-e",), True, "echo ids are one per stream: the kernel's on datagram sockets"),
        (("-L",), False, "multicast loopback"),
        (("-U",), False, "RTTs are the kernel's receive stamps, as ping's default"),
        (("-v",), False, "no verbose mode: ICMP errors are counted, as ping's +N errors"),
        (("-V",), False, "use `probetop --version`"),
        (("-R",), False, "record route"),
        (("-T",), True, "IP timestamp options"),
        (("-F",), True, "IPv6 flow labels"),
        (("-N",), True, "IPv6 node information queries"),
    ),
    dest="ping_unsupported",
)


def tos_value(text: str) -> int:
    """ping -Q: decimal, or hex after 0x, read as ping's strtol reads them
    (leading white space and a sign taken, nothing after the digits; no
    digits at all is 0, so ``-Q ''`` and ``-Q 0x`` are 0 as in ping), 0..255.
    Python's int() also took ``1_0``, ``8 `` and non-ASCII digits, which
    ping refuses (exit 2). A negative value, which ping sets as is, is refused."""
    hexa = text[:2] in ("0x", "0X")
    body = text[2:] if hexa else text
    digits = "[0-9a-fA-F]" if hexa else "[0-9]"
    if body and not re.fullmatch(rf"[ \t\n\v\f\r]*[+-]?{digits}+", body):
        raise OptionValueError(f"bad TOS value: {text}")
    value = int(body.strip(" \t\n\v\f\r"), 16 if hexa else 10) if body else 0
    if not 0 <= value <= 255:
        raise OptionValueError(f"the TOS bits must be within 0..255, got {value}")
    return value


def fill_pattern(text: str) -> str:
    """ping -p: up to 16 bytes as hex digits, read two at a time (``fff`` is
    ff 0f, as ping's sscanf); more than 16 are ignored, as ping does. The
    bytes as lower-case hex, two digits each; ``""`` for an empty pattern,
    which ping takes too (its payload then stays zeros: ``PATTERN: 0x``)."""
    if not all(c in "0123456789abcdefABCDEF" for c in text):
        raise OptionValueError(f"patterns must be specified as hex digits: {text}")
    pairs = [text[i : i + 2] for i in range(0, min(len(text), 32), 2)]
    return "".join(f"{int(pair, 16):02x}" for pair in pairs)


SPEC = CommandSpec(
    name="icmp",
    help="ICMP echo: requests/s, replies/s, pps, loss, RTT percentiles (ping -f, hping3)",
    description=DESCRIPTION,
    epilog=EPILOG,
    own_common=("--interval",),
    options=(
        # ping's own exit status 1 (iputils strtol_or_err, and no destination)
        # where it refuses these values; argparse's 2 for the rest, as ping's usage.
        Option(
            ("host",),
            "name or address to send echo requests to",
            metavar="HOST",
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("-f", "--flood"),
            "send a new request as each reply arrives (ping -f), or every 10 ms without one; "
            "prints ping -f's dots unless -q",
            action="store_true",
            default=False,
            exclusive="pace",
        ),
        Option(
            ("--rate",),
            "fixed requests/s regardless of replies (hping3)",
            number(positive=True),
            metavar="PPS",
            exclusive="pace",
        ),
        Option(
            ("-i", "--interval", "--send-interval"),
            "time between requests, as ping -i (0.2, 200ms, 20us) or hping3 -i (u20: "
            "20 microseconds); default 1 s. A plain number is whole ms, as ping reads "
            "it (0.0015 is 1 ms, below 1 ms is 0); 0: the next request as a reply comes "
            "(or after 10 ms), as ping -i 0, with per-reply lines",
            send_interval,
            metavar="DURATION",
            dest="send_interval",
            exclusive="pace",
        ),
        Option(
            ("-A", "--adaptive"),
            "ping -A: once a reply came, the time between requests is the RTT's moving "
            "average (ping's ewma) in whole ms, at least 2 ms for a user other than root; "
            "0 ms (root) paces by the replies, as a flood; before it, -i's (default 1 s)",
            action="store_true",
            default=False,
        ),
        Option(
            ("--sample-interval",),
            "sampling interval in seconds (default 1); --interval here is ping's send interval",
            duration(positive=True),
            1.0,
            "S",
            dest="interval",  # the common sampling interval, under another name
        ),
        Option(
            ("-s", "--size"),
            "ICMP payload bytes, as ping -s (default 56; 1k = 1024)",
            byte_size(),
            56,
            "BYTES",
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("--streams",),
            "independent senders, each with its own socket and thread (default 1)",
            _count,
            1,
            "N",
        ),
        Option(
            ("-c", "--count"),
            "stop after N requests (with -w: after N replies, as ping)",
            _count,
            metavar="N",
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("-w", "--deadline"),
            "stop after S seconds, as ping -w (the same as --time)",
            duration(),
            metavar="S",
            dest="time",  # the common --time: one deadline, two spellings
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("-q", "--quiet"),
            "no per-reply lines (nor flood dots): the PING line and the statistics, as ping -q",
            action="store_true",
            default=False,
        ),
        Option(
            ("-a", "--audible"),
            "a bell (BEL, \\a) at the end of each reply line, as ping -a",
            action="store_true",
            default=False,
        ),
        Option(
            ("-O", "--report-outstanding"),
            "before each request, say if the one before it is still unanswered "
            "(ping -O's 'no answer yet for icmp_seq=N'; printed with -q too, as ping)",
            action="store_true",
            default=False,
            dest="outstanding",
        ),
        Option(
            ("-D", "--timestamps"),
            "print the arrival time (Unix seconds) before each reply line, as ping -D",
            action="store_true",
            default=False,
        ),
        Option(
            ("-t", "--ttl"), "IP TTL / hop limit", _count, metavar="N", refused_exit=PING_VALUE_EXIT
        ),
        Option(
            ("-M", "--pmtudisc"),
            "path MTU discovery, as ping -M: do (set don't-fragment; a request above the "
            "path MTU fails and counts in ping's +N errors), want (fragment one that is too "
            "large), dont (never set don't-fragment). Without -M, don't-fragment, and a "
            "--size above the path MTU is refused before anything is sent",
            choices=PMTUDISC_MODES,
            dest="pmtudisc",
        ),
        Option(
            ("-Q", "--tos"),
            "as ping -Q: the IP TOS byte (IPv6: traffic class) of every request, decimal "
            "or 0x hex (DSCP 46, EF, is 184 or 0xb8)",
            tos_value,
            metavar="TOS",
        ),
        Option(
            ("-m", "--mark"),
            "as ping -m: the socket mark (SO_MARK: policy routing, nftables meta mark) of "
            "every request; needs CAP_NET_ADMIN (refused without, where ping only warns)",
            whole_number(0, 2**32 - 1),
            metavar="MARK",
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("-p", "--pattern"),
            "as ping -p: fill the payload with these bytes (up to 16, hex), repeated; "
            "ping's PATTERN: line first (not with -q)",
            fill_pattern,
            metavar="HEX",
        ),
        Option(
            ("-S", "--sndbuf"),
            "as ping -S: the socket's send buffer (SO_SNDBUF) in bytes (1k = 1024)",
            byte_size(),
            metavar="BYTES",
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("-4",),
            "IPv4 only",
            action="store_const",
            const=4,
            dest="family",
            exclusive="family",
        ),
        Option(
            ("-6",),
            "IPv6 only",
            action="store_const",
            const=6,
            dest="family",
            exclusive="family",
        ),
        Option(
            ("-I", "--source"),
            "as ping -I: a source address (one of this host's), or an interface name to bind "
            "every request to",
            metavar="ADDR|IFNAME",
        ),
        Option(
            ("-b", "--broadcast"),
            "allow a broadcast or multicast target",
            action="store_true",
            default=False,
        ),
        Option(
            ("-l", "--preload"),
            "as ping -l: a flood keeps N requests outstanding per stream; paced, "
            "the first N go out at once (default 1)",
            _count,
            1,
            "N",
            refused_exit=PING_VALUE_EXIT,
        ),
        Option(
            ("-W", "--grace"),
            "a request unanswered this long is lost, as ping -W TIMEOUT (default 1); "
            "on Ctrl-C or --time, "
            f"replies in flight are awaited at most min(this, {STOP_DRAIN_S:g}) s",
            linger_time,
            1.0,
            "S",
        ),
        Option(
            ("--socket",),
            "socket kind (default: datagram where allowed, else raw)",
            choices=SOCKET_MODES,
            default="auto",
            dest="socket_mode",
        ),
        *PING_UNSUPPORTED.options(),
    ),
    spellings=(
        Spelling(
            "ping", "-n", None, takes_value=False, note="addresses are printed numerically already"
        ),
        Spelling("hping3", "-1", None, takes_value=False, note="icmp sends ICMP echo"),
        Spelling("hping3", "--icmp", None, takes_value=False, note="icmp sends ICMP echo"),
        Spelling("hping3", "-d", "-s", value_pattern=r"\s*\d+\s*[kK]?"),
        Spelling(
            "ping",
            "-d",
            None,
            takes_value=False,
            note="SO_DEBUG on the socket: nothing it measures changes",
        ),
        Spelling("hping3", "--data", "-s"),
        Spelling(
            "ping",
            "-C",
            None,
            takes_value=False,
            note="connect() on the socket: replies are matched by id and address already",
        ),
    ),
)


def refused(name: str, message: str) -> UsageProbeError:
    """A value the settings refuse, exiting with what its option's spec says
    (``Option.refused_exit``: ping's 1 for -c, -s, -w, -l, -t, -S, -m)."""
    exc = UsageProbeError(message)
    exits = {o.name: o.refused_exit for o in SPEC.options}
    exc.exit_code = exits.get(name, UsageProbeError.exit_code)
    return exc


@dataclass(frozen=True, slots=True)
class IcmpSettings:
    """What to send where (ping's names in brackets).

    ``period_s`` None, ``rate`` None and ``flood`` False = 1 request/s.
    ``rate`` and ``period_s`` count over all streams. ``interval_s`` is the
    sampling interval. The field names are the ``params`` of a recording's
    header (probetop 0.1), so keep them.
    """

    host: str
    flood: bool = False  # -f
    rate: float | None = None  # requests/s over all streams (hping3 -i u...)
    period_s: float | None = None  # seconds between requests (-i), over all streams
    size: int = 56  # ICMP payload bytes (-s)
    streams: int = 1
    count: int | None = None  # -c
    ttl: int | None = None  # -t
    family: int | None = None  # 4, 6 or None (whatever the name resolves to first)
    source: str | None = None  # -I
    broadcast: bool = False  # -b
    preload: int = 1  # flood: requests kept outstanding per stream (-l)
    grace_s: float = 1.0
    socket_mode: str = "auto"  # auto, raw, datagram
    interval_s: float = 1.0  # sampling interval
    # Since 0.3: the headless text's ping options (no effect on what is sent).
    quiet: bool = False  # -q
    timestamps: bool = False  # -D
    # Since 0.4: -w/--time (the run's deadline: the send loop sends nothing at
    # or after it, as ping; the runner ends the run there). With -c it makes
    # the count one of replies, as ping -c N -w S (counts_replies).
    deadline_s: float | None = None
    # Since 0.5: ping -A (the period follows the RTT ewma once a reply came).
    adaptive: bool = False
    # Since 0.6: ping -M (None: don't-fragment, and a size above the path MTU refused).
    pmtudisc: str | None = None
    # Since 0.6: ping -O (headless text only: nothing sent changes).
    outstanding: bool = False
    audible: bool = False  # -a (headless text only)
    # Since 0.7 (each only when given): ping -Q, -m, -p (hex), -S.
    tos: int | None = None
    mark: int | None = None
    pattern: str | None = None
    sndbuf: int | None = None

    @classmethod
    def from_options(
        cls, values: Mapping[str, Any], *, interval_s: float, deadline_s: float | None = None
    ) -> IcmpSettings:
        """Settings from parsed ``SPEC`` values plus the sampling interval and
        the run's deadline (-w/--time; None: none); validated."""
        if (flag := PING_UNSUPPORTED.given(values)) is not None:
            raise UsageProbeError(PING_UNSUPPORTED.message(flag))
        settings = cls(
            host=values["host"],
            flood=bool(values.get("flood", False)),
            rate=values.get("rate"),
            period_s=values.get("send_interval"),
            size=values.get("size", 56),
            streams=values.get("streams", 1),
            count=values.get("count"),
            ttl=values.get("ttl"),
            family=values.get("family"),
            source=values.get("source"),
            broadcast=bool(values.get("broadcast", False)),
            preload=values.get("preload", 1),
            grace_s=values.get("grace", 1.0),
            socket_mode=values.get("socket_mode", "auto"),
            interval_s=interval_s,
            quiet=bool(values.get("quiet", False)),
            timestamps=bool(values.get("timestamps", False)),
            deadline_s=deadline_s,
            adaptive=bool(values.get("adaptive", False)),
            pmtudisc=values.get("pmtudisc"),
            outstanding=bool(values.get("outstanding", False)),
            audible=bool(values.get("audible", False)),
            tos=values.get("tos"),
            mark=values.get("mark"),
            pattern=values.get("pattern"),
            sndbuf=values.get("sndbuf"),
        )
        settings.validate()
        return settings

    @property
    def counts_replies(self) -> bool:
        """ping -c N -w S: with a deadline, the count is of echo replies
        (sending goes on until N are answered or the deadline comes, and
        fewer than N replies exit 1); without one, of requests (-c N)."""
        return self.count is not None and bool(self.deadline_s)

    @property
    def paced_by_replies(self) -> bool:
        """A flood (-f) or ping's -i 0: the next request as a reply comes (or
        after 10 ms without one); only -f prints dots."""
        return self.flood or self.period_s == 0

    @property
    def total_rate(self) -> float | None:
        """Requests/s over all streams, or None for flood."""
        if self.paced_by_replies:
            return None
        if self.rate is not None:
            return self.rate
        return 1.0 / (self.period_s or DEFAULT_PERIOD_S)

    def validate(self) -> None:
        """Raise UsageProbeError on contradictions and out-of-range values."""
        # Rates above UNSOLICITED_MAX_PPS are opt-in: the default is 1/s, and
        # --flood, --rate and -i are each an explicit choice of rate.
        if self.flood and (self.rate is not None or self.period_s is not None):
            raise UsageProbeError("--flood sends as fast as replies come back: drop --rate/-i")
        if self.adaptive and (self.flood or self.rate is not None):
            raise UsageProbeError(
                "-A adapts the time between requests to the RTT: drop --flood/--rate "
                "(-i sets the period before the first reply)"
            )
        if self.rate is not None and self.period_s is not None:
            raise UsageProbeError("give either --rate or -i/--send-interval, not both")
        if self.rate is not None and not (
            MIN_RATE <= self.rate <= MAX_RATE and math.isfinite(self.rate)
        ):
            raise UsageProbeError(
                f"--rate must be within {MIN_RATE:.6g}..{MAX_RATE:.0f} requests/s "
                f"(one an hour to 10M/s), got {self.rate:g}"
            )
        if self.period_s and not (1.0 / MAX_RATE <= self.period_s <= 3600):
            raise UsageProbeError(
                f"the send interval (-i) must be within 100ns..3600s (10M requests/s to "
                f"one an hour), got {self.period_s:g} s"
            )
        if not 0 <= self.size <= MAX_SIZE:
            raise refused("size", f"--size must be within 0..{MAX_SIZE} bytes, got {self.size}")
        if not 1 <= self.streams <= MAX_STREAMS:
            raise UsageProbeError(f"--streams must be within 1..{MAX_STREAMS}, got {self.streams}")
        if self.count is not None:
            try:
                check_whole("--count", self.count, minimum=1, maximum=INT64_MAX)
            except UsageProbeError as exc:
                raise refused("count", str(exc)) from None
        if self.count is not None and self.count < self.streams:
            raise UsageProbeError("--count must be at least --streams (each stream sends one)")
        if self.ttl == 0:  # ping takes 0, and its socket refuses it (exit 2)
            raise UsageProbeError("--ttl must be within 1..255, got 0: no socket takes a TTL of 0")
        if self.ttl is not None and not 1 <= self.ttl <= 255:
            raise refused("ttl", f"--ttl must be within 1..255, got {self.ttl}")
        if self.sndbuf is not None and not 1 <= self.sndbuf <= 2**31 - 1:
            raise refused(
                "sndbuf", f"--sndbuf must be within 1..{2**31 - 1} bytes, got {self.sndbuf}"
            )
        if not 1 <= self.preload <= 65536:
            raise refused("preload", f"--preload must be within 1..65536, got {self.preload}")
        if self.grace_s == 0:
            raise UsageProbeError(
                "-W 0: probetop's -W/--grace is each request's loss deadline, so 0 would "
                "count every reply lost (ping 20221126 runs it as a 0 s linger: no wait "
                "after the last request when no reply came); give -W 0.001 or more, "
                "and -w DEADLINE to bound the run (docs/icmp.md)"
            )
        if not 0.001 <= self.grace_s <= 60:
            raise UsageProbeError(f"--grace must be within 0.001..60 s, got {self.grace_s:g}")
        if self.period_s == 0 and not self.flood and os.getuid() != 0:
            # ping 20221126's refusal (MINUSERINTERVAL), in its words, and its exit 2
            raise UsageProbeError(
                "cannot flood; minimal interval allowed for user is 2ms "
                "(-i 0 paces by the replies as ping's does for root only)"
            )
        if self.socket_mode not in SOCKET_MODES:
            raise UsageProbeError(f"unknown socket mode {self.socket_mode!r}")
        floor = sample_interval_floor_s(self.streams)
        check_interval(
            "--sample-interval",
            self.interval_s,
            floor_s=floor,
            why=(
                "each interval merges every stream's counters and crosses the hub, "
                "the recorder and the dashboard"
                if floor <= MIN_INTERVAL_S
                else f"each interval merges the counters of {self.streams} streams, "
                f"~{TICK_COST_PER_STREAM_S * 1e6:g} us each, kept under {TICK_SHARE:.0%} "
                "of the event loop"
            ),
        )
        rate = self.total_rate
        if self.adaptive or rate is None or rate / self.streams >= BUSY_STREAM_RATE:
            check_busy_workers(
                "--streams",
                self.streams,
                "flood stream",
                why="a flooding stream keeps a CPU busy and takes the GIL every interval",
            )
        check_capacity("--streams", self.streams, STREAM_COST)


def reference_command(settings: IcmpSettings, address: str | None = None) -> str:
    """The ping (flood, or up to 100/s) or hping3 (faster fixed rates) equivalent;
    with ``--streams N``, N of them started together (one per stream, each
    with its share of the rate and count) as one shell line."""
    if settings.streams <= 1:
        return _one_command(settings, address)
    cmds = [_one_command(s, address) for s in stream_settings(settings)]
    return "(" + " & ".join(cmds) + " & wait)"


def stream_settings(settings: IcmpSettings) -> list[IcmpSettings]:
    """What each of ``settings.streams`` streams runs alone: its share of the
    rate and of the count (as the probe splits them)."""
    n = max(1, settings.streams)
    base, extra = divmod(settings.count or 0, n)
    out = []
    for i in range(n):
        count = (base + (1 if i < extra else 0)) if settings.count else None
        rate = None if settings.rate is None else settings.rate / n
        period = None if settings.period_s is None else settings.period_s * n
        out.append(
            dataclasses.replace(settings, streams=1, count=count, rate=rate, period_s=period)
        )
    return out


def _one_command(settings: IcmpSettings, address: str | None) -> str:
    o = settings
    host = address or o.host
    fam = ["-6"] if o.family == 6 else (["-4"] if o.family == 4 else [])
    rate = o.total_rate
    if (
        rate is not None
        and rate > UNSOLICITED_MAX_PPS
        and o.preload == 1
        and not o.adaptive
        and o.family != 6
        and ":" not in host
    ):
        usec = max(1, round(1e6 / rate))
        cmd = ["hping3", "-q", "--icmp", "-i", f"u{usec}", "-d", str(o.size)]
        if o.count:
            cmd += ["-c", str(o.count)]
        if o.ttl:
            cmd += ["-t", str(o.ttl)]
        return shlex.join([*cmd, host])
    cmd = ["ping", "-q", *fam]
    cmd += ["-A"] if o.adaptive else []
    if o.flood:
        cmd += ["-f"]
    elif o.period_s == 0:
        cmd += ["-i", "0"]
    elif rate is not None and rate != 1.0:
        cmd += ["-i", f"{1.0 / rate:g}"]
    if o.preload > 1:
        cmd += ["-l", str(o.preload)]
    cmd += ["-s", str(o.size)]
    if o.count:
        cmd += ["-c", str(o.count)]
    if o.deadline_s:  # the run's deadline is ping's -w, with or without -c
        cmd += ["-w", f"{o.deadline_s:g}"]
    if o.ttl:
        cmd += ["-t", str(o.ttl)]
    if o.pmtudisc:
        cmd += ["-M", o.pmtudisc]
    if o.source:
        cmd += ["-I", o.source]
    if o.tos is not None:
        cmd += ["-Q", str(o.tos)]
    if o.mark is not None:
        cmd += ["-m", str(o.mark)]
    if o.pattern is not None:
        cmd += ["-p", o.pattern]
    if o.sndbuf is not None:
        cmd += ["-S", str(o.sndbuf)]
    if o.broadcast:
        cmd += ["-b"]
    return shlex.join([*cmd, host])
