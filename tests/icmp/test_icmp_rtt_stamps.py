"""RTT as ping measures it: the reply's kernel receive timestamp, not a user-space clock.

The loop reads SO_TIMESTAMPNS from recvmsg's control data (engine.kernel_stamp)
and falls back to the clock read after recvmsg only when the stamp is missing
or implausible (engine.reply_time). Real sockets on loopback, raw and
datagram, IPv4 and IPv6, paced and flood; the fallback on crafted input; the
average against ping's, with both tools pinging 127.0.0.1 at the same time.
"""

from __future__ import annotations

import re
import shutil
import signal
import statistics
import subprocess
import sys

import numpy as np
import pytest
from icmp_fixtures import Peer, icmp_peer  # noqa: F401 (fixtures)
from privilege import DATAGRAM, needs_icmp, needs_raw_icmp
from probetop.probes.icmp import engine as eng
from probetop.probes.icmp import layout, loopstate

# One stream's loop on a real socket, as the probe runs it, once per case
# (host, period_ns) in one process (each process spends about a CPU-second
# importing and loading the compiled loop): prints, a line per case, received,
# the replies timed in user space, and min/max RTT (ns).
LOOP = """
import sys, time
from probetop.probes.icmp import layout, loopstate as eng
from probetop.probes.icmp.packet import checksum_partial, echo_request
from probetop.probes.icmp.sockets import open_icmp_socket, resolve_target
mode, count = sys.argv[1], int(sys.argv[2])
for case in sys.argv[3:]:
    host, period_ns = case.rsplit(",", 1)[0], int(case.rsplit(",", 1)[1])
    target = resolve_target(host)
    sock, ident = open_icmp_socket(target, mode, ident=0x5A17)
    packet, addr = echo_request(ident, 56, target.v6), target.sockaddr()
    cfg = eng.make_config(
        fd=sock.fileno(), v6=target.v6, raw=mode == "raw", ident=ident, period_ns=period_ns,
        preload=1, count=count, grace_ns=1_000_000_000, packet_len=len(packet),
        checksum_partial=checksum_partial(packet), addr_len=len(addr),
    )
    start = time.monotonic_ns()
    loop = eng.LoopState(cfg, packet, addr, start)
    while time.monotonic_ns() - start < 20_000_000_000:  # bounded, whatever happens
        if loop.run_slice(time.monotonic_ns() + 100_000_000) == layout.SLICE_DONE:
            break
    c = loop.interval.counters
    print(c[layout.K_RECEIVED], loop.user_stamped, c[layout.K_RTT_MIN], c[layout.K_RTT_MAX])
    sock.close()
"""

# Every case both loops are checked in: each host, paced (1 ms) and flood.
CASES = [(host, period_ns) for host in ("127.0.0.1", "::1") for period_ns in (1_000_000, 0)]


def run_loops(
    mode: str, count: int, prefix: tuple[str, ...] = ()
) -> dict[tuple[str, int], tuple[int, ...]]:
    """Each case of ``CASES`` run in one process: its figures by case."""
    out = subprocess.run(
        [*prefix, sys.executable, "-c", LOOP, mode, str(count),
         *(f"{host},{period_ns}" for host, period_ns in CASES)],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == len(CASES), out.stdout
    rows = (tuple(int(x) for x in line.split()) for line in lines)
    return dict(zip(CASES, rows, strict=True))


@needs_raw_icmp
def test_every_reply_is_timed_by_the_kernel_raw() -> None:
    for case, (received, user_stamped, rtt_min, rtt_max) in run_loops("raw", 300).items():
        assert received == 300, case
        assert user_stamped == 0, case
        assert 0 < rtt_min <= rtt_max < 1_000_000_000, case


@needs_icmp
def test_every_reply_is_timed_by_the_kernel_datagram(request: pytest.FixtureRequest) -> None:
    # Where this user may open datagram ICMP sockets, on this host's loopback;
    # else as root, in a namespace whose ping_group_range allows them.
    inside: tuple[str, ...] = ()
    if not DATAGRAM:
        icmp_peer: Peer = request.getfixturevalue("icmp_peer")
        icmp_peer.sysctl("net.ipv4.ping_group_range", "0 2147483647")
        inside = ("ip", "netns", "exec", icmp_peer.ns)
    for case, (received, user_stamped, rtt_min, _) in run_loops("datagram", 300, inside).items():
        assert (received, user_stamped) == (300, 0), case
        assert rtt_min > 0, case


def _msg_with(words: list[int]) -> tuple[np.ndarray, np.ndarray]:
    msg = np.zeros(layout.N_MSGHDR, np.int64)
    cmsg = np.zeros(layout.CONTROL_WORDS, np.int64)
    cmsg[: len(words)] = words
    msg[layout.M_CONTROLLEN] = 8 * len(words)
    return msg, cmsg


def test_kernel_stamp_walks_the_control_data() -> None:
    stamp = [32, layout.SOL_SOCKET | (layout.SCM_TIMESTAMPNS << 32), 7, 500]
    msg, cmsg = _msg_with(stamp)
    assert eng.kernel_stamp(msg, cmsg, 100) == 7_000_000_400  # realtime - offset
    # Behind another cmsg (IP_TTL: 20 bytes, padded to 24).
    msg, cmsg = _msg_with([20, 0 | (2 << 32), 64, *stamp])
    assert eng.kernel_stamp(msg, cmsg, 0) == 7_000_000_500
    # None, cut short by the kernel (MSG_CTRUNC), or another kind: no stamp.
    assert eng.kernel_stamp(*_msg_with([]), 0) == -1
    msg, cmsg = _msg_with(stamp)
    msg[layout.M_CONTROLLEN] = 24
    assert eng.kernel_stamp(msg, cmsg, 0) == -1
    assert eng.kernel_stamp(*_msg_with([32, 1 | (29 << 32), 7, 500]), 0) == -1
    assert eng.kernel_stamp(*_msg_with([0, 0, 0, 0]), 0) == -1  # malformed: no endless walk


def _reply_once(kernel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Account one echo reply (datagram IPv4, seq 0 sent at 1000 ns, read at 5000 ns)."""
    cfg = loopstate.make_config(
        fd=-1, v6=False, raw=False, ident=0, period_ns=0, preload=1, count=0, grace_ns=10**9,
        packet_len=8, checksum_partial=0, addr_len=16,
    )  # fmt: skip
    st = np.zeros(layout.N_STATE, np.int64)
    st[layout.S_HEAD], st[layout.S_IN_FLIGHT], st[layout.S_MAX_RX] = 1, 1, -1
    st[layout.S_LAST_RTT] = -1
    slot_state = np.zeros(layout.SLOTS, np.uint8)
    slot_sent = np.zeros(layout.SLOTS, np.int64)
    slot_state[0], slot_sent[0] = layout.IN_FLIGHT, 1000
    iv = loopstate.IntervalArrays()
    buf = np.zeros(64, np.uint8)  # type 0 (echo reply), id 0, seq 0
    src = np.zeros(layout.ADDR_BYTES, np.uint8)
    for _ in range(2):  # the second is a duplicate
        eng._on_packet(
            5000, kernel, -1, 16, buf, src, cfg, st, slot_state, slot_sent, iv.counters,
            iv.rtt_sums, iv.histogram, iv.icmp_types, iv.err_ring, iv.err_len, iv.err_src,
            np.zeros((1, layout.N_LOG), np.int64),
        )  # fmt: skip
    return st, iv.counters, iv.rtt_sums


@pytest.mark.parametrize(
    ("kernel", "rtt", "user"),
    [(3000, 2000, 0), (5000, 4000, 0), (-1, 4000, 1), (999, 4000, 1), (5001, 4000, 1)],
    ids=["kernel", "kernel-at-read", "none", "before-send", "after-read"],
)
def test_an_implausible_stamp_falls_back_to_the_read_time_once(
    kernel: int, rtt: int, user: int
) -> None:
    st, ctr, sums = _reply_once(kernel)
    assert st[layout.S_USER_STAMPED] == user
    assert ctr[layout.K_RECEIVED] == 1 and ctr[layout.K_DUPS] == 1
    assert ctr[layout.K_RTT_MIN] == ctr[layout.K_RTT_MAX] == rtt
    assert sums[layout.R_SUM] == rtt


# A reply line with -D (ping's and probetop's): [Unix time] ... icmp_seq=N ... time=X ms
REPLY_LINE = re.compile(r"^\[([\d.]+)\] .*icmp_seq=\d+ .*time=([\d.]+) ms$", re.M)
AVG = re.compile(r"^rtt min/avg/max/mdev = [\d.]+/([\d.]+)/", re.M)


def _side_by_side(host: str) -> tuple[float, float]:
    """One round: ``probetop icmp -c 100 -i 0.01 -D`` while ``ping -D -i 0.01``
    runs through all of it; (probetop's avg RTT from its own ``rtt`` line, ping's
    avg over the replies that came while probetop's did), in µs."""
    ping = subprocess.Popen(
        ["ping", "-D", "-i", "0.01", "-w", "90", host],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        ours = subprocess.run(
            [sys.executable, "-m", "probetop.tui.main", "icmp", host,
             "-c", "100", "-i", "0.01", "-D"],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
        ping.send_signal(signal.SIGINT)
        ping_out = ping.communicate(timeout=10)[0]
    finally:
        if ping.poll() is None:
            ping.kill()
            ping.wait()
    assert ours.returncode == 0, ours.stderr
    replies = [float(at) for at, _ in REPLY_LINE.findall(ours.stdout)]
    avg = AVG.search(ours.stdout)
    assert len(replies) == 100 and avg, ours.stdout
    # ping's replies within probetop's (its lines print as the replies come)
    first, last = replies[0] - 0.005, replies[-1] + 0.005
    theirs = [float(ms) for at, ms in REPLY_LINE.findall(ping_out) if first <= float(at) <= last]
    assert len(theirs) >= 20, ping_out[-2000:]
    return float(avg.group(1)) * 1000, statistics.mean(theirs) * 1000


@needs_icmp
def test_loopback_rtt_avg_reads_as_ping_does() -> None:
    # ping's RTT ends at the reply's kernel receive stamp; probetop's ended at
    # the clock read after recvmsg returned, which beside `sha256sum
    # /dev/zero` read medians of 1.47 and 1.63 x ping's here (the reply's way
    # up the stack and the thread's wake-up). Now the kernel stamp ends it too.
    #
    # Side by side, not one after the other: a loopback RTT's level is the
    # machine's at that moment and swings by more than that bug from one run
    # to the next, in ping too. Beside the same hog, ping against ping one
    # run after the other (both on one CPU) read 0.43-2.36 x, and this test
    # when it alternated the tools read 3.57 and 3.48 x in CI run 65's first
    # rounds; ping against ping at the same time read 0.83-1.36 x, probetop
    # against ping at the same time 0.30-1.33 x a round, medians of 7 rounds
    # 0.74-0.95 (2026-11-29, load average 10-20 with the hog).
    if shutil.which("ping") is None:
        pytest.skip("ping is not installed (apt-get install iputils-ping)")
    ratios: list[float] = []
    for _ in range(7):
        ours, ping = _side_by_side("127.0.0.1")
        ratios.append(ours / ping)
    # Within 25 % above ping's (the bound of the alternating test, unchanged):
    # the old stamp's medians, and 50 us more per reply (3.4 x), are above it.
    # It reads below ping's: see docs/icmp.md (RTT is ping's).
    assert 0.5 <= statistics.median(ratios) <= 1.25, [round(r, 2) for r in ratios]
