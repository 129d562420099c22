"""A recording of a host whose interfaces come and go holds bounded memory
(issue 29 Want 8): every new device brings new key strings
(``rx_pps@veth3f2a``), and the line encoder's caches of strings known to
pass redaction kept up to 65,536 of them, growing a churn soak for days."""

from __future__ import annotations

import tracemalloc

from probetop.probes.core.passive import NicCounters
from probetop.probes.record import redaction
from probetop.probes.record.codec import dump_line_bytes, encode_record
from probetop.probes.system.records import NetInterval

NICS_PER_LINE = 4  # lo, eth0 and two veths of the moment


def _line(n: int) -> bytes:
    """The system.net line of interval ``n``: lo and eth0 always, and two
    veths that were created for this interval only (a fresh name each)."""
    names = ["lo", "eth0", f"ptv{n}a", f"ptv{n}b"]
    nics = {name: NicCounters(name, 1.0, 2.0, 64.0, 128.0, 0.0, 0.0, 0.0, 0.0) for name in names}
    sample = NetInterval(nics).to_sample(n * 10**9, 1.0)
    return dump_line_bytes(encode_record(sample, 0))


def test_new_devices_do_not_grow_the_encoders_caches() -> None:
    for n in range(3000):  # the caches full, whatever their bound
        _line(n)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for n in range(3000, 9000):  # 12,000 more devices, ~100,000 new keys
            line = _line(n)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # Every new key kept would be ~100 B each: ~10 MB. Bounded caches that are
    # already full stay within their size (a set's table, an LRU's entries).
    assert grown < 1024 * 1024, grown
    assert b'"rx_pps@ptv8999b":1.0' in line  # still the plain fast line
    assert len(redaction._UNCHANGED) <= redaction._UNCHANGED_CAP
    info = redaction._field_kind.cache_info()
    assert info.maxsize is not None and info.currsize <= info.maxsize <= 4096


def test_the_names_in_use_stay_known_after_a_reset() -> None:
    """The set starts over when full: the names every line has are known
    again after one line (the fast path stays fast)."""
    for n in range(redaction._UNCHANGED_CAP):
        _line(n)
    line = _line(10**6)
    assert b'"rx_pps@lo"' in line
    assert {b"rx_pps@lo", b"type", b"sample"} <= redaction._UNCHANGED


def test_the_caches_hold_little_once_full() -> None:
    """What the encoder's caches hold once full is what they can add to a
    long run after its start: they fill at the rate devices bring new key
    strings (issue 29's soaks: ~19 a device, about one a second at the
    soak's default churn), so with a cap of 4,096 strings and an LRU of
    1,024 names they were still filling an hour into a run, ~0.5 MiB. From
    empty to full and through resets, they now hold under 256 KiB (~0.5
    MiB with the old bounds)."""
    redaction._UNCHANGED.clear()
    redaction._field_kind.cache_clear()

    def churn() -> None:
        for n in range(1500):  # 3,000 devices: full, then started over
            _line(n)

    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        churn()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 256 * 1024, grown
    assert redaction._field_kind.cache_info().currsize == redaction._field_kind.cache_info().maxsize
