"""Load mode's phases come from the right libcurl stamps: hand-computed.

A stand-in handle answers each libcurl counter with a different value, so a
stamp read from the wrong counter (NAMELOOKUP for CONNECT, say) or a phase
computed from the wrong pair of stamps changes an expected number below.
The arithmetic is done by hand here, not by the code under test.
"""

from __future__ import annotations

import pycurl
import pytest
from probetop.probes.http.load import generator
from probetop.probes.http.load.generator import _Interval, account, read_stamps

# Cumulative stamps of one HTTPS request, microseconds from its start (as libcurl's
# *_TIME_T): DNS done at 1000, TCP at 3000, TLS at 7000, request sent at 7500,
# first byte at 17500, last byte at 40000.
COUNTERS = {
    pycurl.NAMELOOKUP_TIME_T: 1_000,
    pycurl.CONNECT_TIME_T: 3_000,
    pycurl.APPCONNECT_TIME_T: 7_000,
    pycurl.PRETRANSFER_TIME_T: 7_500,
    pycurl.STARTTRANSFER_TIME_T: 17_500,
    pycurl.TOTAL_TIME_T: 40_000,
    pycurl.RESPONSE_CODE: 200,
    pycurl.NUM_CONNECTS: 1,
}
# By hand: DNS = 1000; TCP = 3000 - 1000; TLS = 7000 - 3000;
# server = 17500 - 7500 (from the request sent, not from TLS done); transfer = 40000 - 17500.
PHASES_US = {"dns": 1_000, "tcp": 2_000, "tls": 4_000, "server": 10_000, "transfer": 22_500}


class Handle:
    """A finished easy handle as the worker reads it (getinfo only)."""

    def __init__(self, counters: dict[int, int]) -> None:
        self.counters = counters

    def getinfo(self, option: int) -> int:
        return self.counters[option]


def one_interval(counters: dict[int, int], waited_us: int = 0) -> dict:
    interval = _Interval(0, 0)
    handle = Handle(counters)
    account(
        interval,
        read_stamps(handle),
        code=generator.info(handle, pycurl.RESPONSE_CODE),
        kind=None,
        message="",
        waited_us=waited_us,
        connects=generator.info(handle, pycurl.NUM_CONNECTS),
    )
    return interval.to_dict(1_000_000_000, 1, 0)


def exact(hist: dict) -> int:
    """The one value of a one-sample histogram (min and max are kept exactly)."""
    assert hist["n"] == 1 and hist["min"] == hist["max"], hist
    return int(hist["min"])


def test_each_phase_is_the_difference_of_its_own_two_stamps():
    doc = one_interval(COUNTERS)
    assert {phase: exact(h) for phase, h in doc["phases"].items()} == PHASES_US


def test_service_is_libcurls_total_and_corrected_adds_the_wait_for_the_schedule():
    doc = one_interval(COUNTERS, waited_us=2_500)
    corrected, service = doc["classes"]["2xx_3xx"].values()
    assert exact(service) == 40_000
    assert exact(corrected) == 42_500  # 2500 late + 40000
    assert doc["codes"] == {"200": 1} and doc["connects"] == 1


def test_plain_http_and_a_reused_connection_have_zero_tls_and_tcp():
    # http:// (appconnect 0) on a reused connection (namelookup and connect 0):
    # request sent at 40, first byte at 5040, last at 5100.
    counters = {**COUNTERS}
    counters.update(
        {
            pycurl.NAMELOOKUP_TIME_T: 0,
            pycurl.CONNECT_TIME_T: 0,
            pycurl.APPCONNECT_TIME_T: 0,
            pycurl.PRETRANSFER_TIME_T: 40,
            pycurl.STARTTRANSFER_TIME_T: 5_040,
            pycurl.TOTAL_TIME_T: 5_100,
        }
    )
    doc = one_interval(counters)
    got = {phase: exact(h) for phase, h in doc["phases"].items()}
    assert got == {"dns": 0, "tcp": 0, "tls": 0, "server": 5_000, "transfer": 60}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("NAMELOOKUP_TIME_T", "CONNECT_TIME_T"),
        ("CONNECT_TIME_T", "APPCONNECT_TIME_T"),
        ("PRETRANSFER_TIME_T", "STARTTRANSFER_TIME_T"),
        ("STARTTRANSFER_TIME_T", "TOTAL_TIME_T"),
        ("APPCONNECT_TIME_T", "PRETRANSFER_TIME_T"),
    ],
)
def test_a_swap_of_two_counters_is_caught(monkeypatch, a, b):
    """The test above fails when the worker reads one stamp from another's
    counter: the table it reads, with two entries swapped, gives other phases."""
    swapped = tuple(
        (name, b if option == a else a if option == b else option)
        for name, option in generator.STAMP_INFO
    )
    monkeypatch.setattr(generator, "STAMP_INFO", swapped)
    doc = one_interval(COUNTERS)
    got = {phase: exact(h) if h["n"] else None for phase, h in doc["phases"].items()}
    assert got != PHASES_US
