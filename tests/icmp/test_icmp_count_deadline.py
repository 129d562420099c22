"""`probetop icmp -c N -w S` means what ping's does (iputils, man ping -w).

With a count and a deadline both given, ping sends until N echo replies
came back or the deadline came, whichever is first (under loss it sends
more than N), and exits 1 when fewer than N replies came back; without -w,
-c N sends N requests. Each case runs real ping and probetop on the same
namespace target (nft drops echo requests there), and both outputs are read
by jc and pingparsing, never by our own parser.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Any

import jc
import pingparsing
import pytest
from icmp_fixtures import icmp_peer  # noqa: F401 (fixture)
from privilege import needs_icmp
from probetop.probes.icmp.report import exit_code
from probetop.tui.cli.parser import build_parser, make_plan

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")

TABLE = "pingw_count"
# A fresh rule's counter starts at 0, so the 1st, 4th, 7th ... request is dropped.
EVERY_THIRD = "numgen inc mod 3 == 0 drop"


def drop(peer: Any, rule: str | None) -> None:
    """Replace the namespace's echo-request rule (a new rule: its counter restarts)."""
    peer.nft(
        f"add table inet {TABLE}; "
        f"add chain inet {TABLE} input {{ type filter hook input priority 0; }}; "
        f"flush chain inet {TABLE} input"
    )
    if rule:
        peer.nft(f"add rule inet {TABLE} input icmp type echo-request {rule}")


def sent_received_status(cmd: list[str]) -> tuple[int, int, int, float]:
    """Run ping or probetop (headless text); (sent, received, exit status,
    printed loss %) as jc and pingparsing read the text, which must agree."""
    return parse_run(subprocess.run(cmd, capture_output=True, text=True, timeout=90))


def side_by_side(*cmds: list[str]) -> list[tuple[int, int, int, float]]:
    """``sent_received_status`` of each command, all started at once (runs
    that share nothing: the wall time of the longest, not of their sum)."""
    procs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds
    ]
    done = []
    for c, p in zip(cmds, procs, strict=True):
        try:
            out, err = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        done.append(subprocess.CompletedProcess(c, p.returncode, out, err))
    return [parse_run(r) for r in done]


def parse_run(r: subprocess.CompletedProcess[str]) -> tuple[int, int, int, float]:
    assert "Traceback" not in r.stderr, r.stderr
    by_jc = jc.parse("ping", r.stdout, quiet=True)
    by_pp = pingparsing.PingParsing().parse(r.stdout).as_dict()
    counts = (by_jc["packets_transmitted"], by_jc["packets_received"])
    assert counts == (by_pp["packet_transmit"], by_pp["packet_receive"]), r.stdout
    return (*counts, r.returncode, by_jc["packet_loss_percent"])


def both(peer: Any, rule: str | None, args: list[str]) -> tuple[tuple[int, ...], ...]:
    """ping's and probetop's (sent, received, status), each with the rule fresh."""
    addr = peer.peer_addr
    drop(peer, rule)
    ping = sent_received_status(["ping", *args, addr])
    drop(peer, rule)
    ours = sent_received_status([*PROBETOP, "icmp", addr, *args, "--headless"])
    return ping, ours


@needs_icmp
@needs_ping
def test_count_and_deadline_send_until_n_replies_under_loss(icmp_peer: Any) -> None:  # noqa: F811
    """Every third request dropped: ping -c 3 -w 10 sends 5 (seq 1 and 4
    lost) and stops at the 3rd reply, exit 0, 40 % loss. Before, probetop
    stopped at 3 sent with 2 replies; ending at the 3rd reply without waiting
    for the 2 unanswered would have printed 0 % loss (in flight, not lost)."""
    ping, ours = both(icmp_peer, EVERY_THIRD, ["-c", "3", "-w", "10", "-i", "0.2"])
    assert ping == (5, 3, 0, 40.0)
    assert ours == ping


@needs_icmp
@needs_ping
def test_count_without_deadline_still_counts_requests(icmp_peer: Any) -> None:  # noqa: F811
    """ping -c 3 (no -w) sends 3 whatever comes back: 2 replies, exit 0."""
    ping, ours = both(icmp_peer, EVERY_THIRD, ["-c", "3", "-i", "0.2", "-W", "0.5"])
    assert ping[:3] == (3, 2, 0)
    assert ours == ping


@needs_icmp
@needs_ping
@pytest.mark.parametrize("rule", [None, "drop"], ids=["deadline-before-count", "all-dropped"])
def test_fewer_replies_than_count_by_the_deadline_exit_1(
    icmp_peer: Any,  # noqa: F811
    rule: str | None,
) -> None:
    """-c 20 -w 1 -i 0.2: the deadline comes after ~5 requests. ping exits 1
    (fewer than 20 replies) also when every one was answered; before,
    probetop exited 0."""
    ping, ours = both(icmp_peer, rule, ["-c", "20", "-w", "1", "-i", "0.2"])
    p_sent, p_recv, p_rc, _ = ping
    o_sent, o_recv, o_rc, _ = ours
    assert p_rc == o_rc == 1
    # The deadline, not the count, ended both: ~5 requests at 0.2 s in 1 s.
    assert 4 <= p_sent <= 6 and 4 <= o_sent <= 6, (ping, ours)
    if rule is None:
        assert (p_recv, o_recv) == (p_sent, o_sent)
    else:
        assert p_recv == o_recv == 0


def settings_of(*argv: str) -> Any:
    args = ["icmp", *argv]
    return make_plan(build_parser().parse_args(args), ["probetop", *args]).settings


def test_only_count_and_deadline_together_count_replies() -> None:
    assert settings_of("-c", "3", "-w", "2", "h").counts_replies
    assert settings_of("--count", "3", "--time", "2", "h").counts_replies  # -w is --time
    assert not settings_of("-c", "3", "h").counts_replies
    assert not settings_of("-c", "3", "--time", "0", "h").counts_replies  # 0: no deadline
    assert not settings_of("-w", "2", "h").counts_replies


def test_exit_status_with_a_reply_count_is_pings() -> None:
    def summary(sent: int, received: int) -> dict[str, Any]:
        return {"sent": sent, "received": received, "lost": sent - received}

    assert exit_code(summary(3, 3), None) == 0
    assert exit_code(summary(3, 2), None) == 0  # -c 3: some replies
    assert exit_code(summary(3, 0), None) == 1
    assert exit_code(summary(5, 3), None, want_replies=3) == 0
    assert exit_code(summary(3, 3), None, want_replies=5) == 1  # deadline first
    assert exit_code(summary(3, 0), None, want_replies=5) == 1


# -- the deadline is the send loop's: no request at or after it ---------------


@needs_icmp
@pytest.mark.parametrize("count", [None, 20], ids=["-w 1", "-c 20 -w 1"])
def test_no_request_goes_out_after_the_deadline_however_late_the_stop(count: int | None) -> None:
    """-w 1 -i 0.2: ping sends at 0, 0.2, 0.4, 0.6 and 0.8 s, none at or after
    1 s. The send loop itself holds the deadline, so a stop that comes late
    (here 0.7 s after it, as the runner's can under load) sends nothing more;
    before, the runner's stop was the deadline and each request due before it
    went out (8 here; at load, one at the edge, counted sent and lost)."""
    import asyncio

    from probetop.probes.icmp import IcmpProbe, IcmpSettings
    from probetop.tui.run.runner import run_headless

    settings = IcmpSettings("127.0.0.1", period_s=0.2, count=count, deadline_s=1.0)
    probe = IcmpProbe(settings)
    probe.prepare()
    result = asyncio.run(run_headless([probe], duration_s=1.7))
    assert not result.errors, result.errors
    s = result.summaries[probe.id]
    assert (s["sent"], s["received"], s["lost"]) == (5, 5, 0), s
    # the rates are per second of sending, which ended at the deadline
    assert s["duration_s"] == pytest.approx(1.0, abs=0.05), s["duration_s"]


@needs_ping
@needs_icmp
@pytest.mark.parametrize(
    "args", [["-w", "1", "-i", "0.2"], ["-c", "20", "-w", "1", "-i", "0.2"], ["-w", "2"]]
)
def test_deadline_on_a_multiple_of_the_interval_sends_what_ping_sends(args: list[str]) -> None:
    """S a multiple of the interval, ping and probetop side by side on
    loopback (nothing dropped there: the two runs share no state), three
    rounds: the same requests sent (ping: 5, 5 and 2), every one answered,
    read by jc and pingparsing."""
    for _ in range(3):
        ping, ours = side_by_side(
            ["ping", *args, "127.0.0.1"], [*PROBETOP, "icmp", "127.0.0.1", *args, "--headless"]
        )
        assert ours[:2] == ping[:2] and ping[0] == ping[1], (ping, ours)
        assert ours[2] == ping[2], (ping, ours)
