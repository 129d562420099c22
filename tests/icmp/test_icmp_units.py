"""Pure parts of the ICMP probe: checksums, histogram, parsing, reference commands."""

from __future__ import annotations

import random
import struct
import subprocess
import sys

import numpy as np
import pytest
from probetop.probes.core.options import OptionValueError
from probetop.probes.icmp import FAMILY, IcmpSettings, layout, reference_command
from probetop.probes.icmp import engine as eng
from probetop.probes.icmp.packet import checksum_partial, echo_request, internet_checksum
from probetop.probes.icmp.stats import histogram_percentile


def duration(text: str) -> float:
    """The -i/--send-interval value, parsed as the spec declares it."""
    parse = FAMILY.spec.option("send_interval").parse
    assert parse is not None
    return float(parse(text))


@pytest.mark.parametrize("size", [0, 1, 7, 56, 1471])
def test_incremental_checksum_matches_full_checksum(size: int) -> None:
    template = echo_request(0xBEEF, size, v6=False)
    partial = checksum_partial(template)
    for seq in (0, 1, 0x7FFF, 0xFFFF, random.randrange(0x10000)):
        s = partial + seq
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        packet = bytearray(template)
        packet[6:8] = struct.pack("!H", seq)
        packet[2:4] = struct.pack("!H", ~s & 0xFFFF)
        assert internet_checksum(bytes(packet)) == 0  # a valid packet sums to 0xFFFF


def test_histogram_buckets_contain_their_values_and_are_narrow() -> None:
    rng = np.random.default_rng(1)
    values = np.concatenate([np.arange(0, 200), rng.integers(200, 10**12, 5000)])
    for v in values:
        idx = eng.hist_index(int(v))
        low, high = layout.hist_bucket_bounds(idx)
        assert low <= v < high
        if v >= layout.HIST_LINEAR:
            assert (high - low) / low <= 1 / layout.HIST_SUB + 1e-12


def test_histogram_percentiles_within_bucket_width_of_exact() -> None:
    rng = np.random.default_rng(7)
    rtts = rng.lognormal(mean=9.0, sigma=1.0, size=20_000).astype(np.int64)  # ~8 µs median
    hist = np.zeros(layout.HIST_SIZE, np.int64)
    for v in rtts:
        hist[eng.hist_index(int(v))] += 1
    ordered = np.sort(rtts)
    for p in (50, 90, 99):
        exact = ordered[int(np.ceil(p / 100 * len(ordered))) - 1]
        got = histogram_percentile(hist, p, float(ordered[0]), float(ordered[-1]))
        assert got == pytest.approx(exact, rel=1 / layout.HIST_SUB)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0.2", 0.2), ("200ms", 0.2), ("20us", 20e-6), ("1s", 1.0), ("500 ns", 5e-7)],
)
def test_send_interval_parsing(text: str, seconds: float) -> None:
    assert duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "-1", "ux", "u-3", "-2x"])
def test_send_interval_rejects(text: str) -> None:
    with pytest.raises(OptionValueError):
        duration(text)


# ping's whole-ms reading of a plain number; garbage is refused (ping
# 20221126 runs it with a warning that it "will become fatal error").
@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("0.0015", 0.001),  # whole ms, as ping's (int)(optval * 1000)
        ("0.0005", 0.0),
        ("1.001", 1.0),  # 1.001 * 1000 is 1000.999..., as in C
        ("1500us", 0.0015),  # probetop's units are exact
        ("fast", None),
        ("1 hour", None),
        ("0.01x", None),
    ],
)
def test_send_interval_reads_as_ping(text: str, seconds: float | None) -> None:
    if seconds is None:
        with pytest.raises(OptionValueError, match="not a duration"):
            duration(text)
    else:
        assert duration(text) == seconds


def test_reference_commands() -> None:
    assert reference_command(IcmpSettings("h", flood=True, size=1)) == "ping -q -f -s 1 h"
    assert reference_command(IcmpSettings("h")) == "ping -q -s 56 h"
    assert reference_command(IcmpSettings("h", rate=50_000, size=1)) == (
        "hping3 -q --icmp -i u20 -d 1 h"
    )
    assert reference_command(IcmpSettings("::1", rate=500, family=6)) == (
        "ping -q -6 -i 0.002 -s 56 ::1"
    )


def test_cli_import_stays_light() -> None:
    """`probetop icmp --help` must not pay for numba, numpy or scapy."""
    code = (
        "import sys; from probetop.tui.commands import load; load('icmp'); "
        "print(','.join(m for m in ('numba', 'numpy', 'scapy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _runs(outcomes: list[bool]) -> dict[str, int]:
    """The engine's run counters for a sequence of outcomes (True: replied),
    the first run left out as the engine does."""
    counters = dict.fromkeys(layout.COUNTER_NAMES, 0)
    counters["received"] = sum(outcomes)
    counters["lost"] = len(outcomes) - sum(outcomes)
    runs: list[tuple[bool, int]] = []
    for o in outcomes:
        if runs and runs[-1][0] == o:
            runs[-1] = (o, runs[-1][1] + 1)
        else:
            runs.append((o, 1))
    for o, n in runs[1:-1]:  # the first run is left out, the last is still open
        kind = "reply" if o else "loss"
        counters[f"{kind}_runs"] += 1
        counters[f"{kind}_run_sum"] += n
        counters[f"{kind}_run_sumsq"] += n * n
    return counters


def test_rate_limit_hint_tells_a_token_bucket_from_random_loss() -> None:
    from probetop.probes.icmp.stats import rate_limit_hint

    rng = random.Random(7)
    # A burst of 6, then one reply every 10 requests: a token bucket.
    bucket = [True] * 6 + ([False] * 9 + [True]) * 40
    hint = rate_limit_hint(_runs(bucket))
    assert hint is not None and "net.ipv4.icmp_ratelimit" in hint.text
    assert "net.ipv4.icmp_ratemask" in hint.text
    # Slightly over the limit: long regular runs of replies, one loss each.
    assert rate_limit_hint(_runs(([True] * 19 + [False]) * 30)) is not None
    for p in (0.02, 0.1, 0.5, 0.9):  # independent loss never looks like one
        outcomes = [rng.random() >= p for _ in range(20_000)]
        assert rate_limit_hint(_runs(outcomes)) is None, p
    assert rate_limit_hint(_runs([True] * 1000)) is None  # no loss
