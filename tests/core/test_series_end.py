"""When a device's series ends (issue 29, Want 8): the hub's SeriesTracker
ends a probe's ``name@entity`` series once, with its summary so far, and
the record reaches every subscriber before the sample that showed it."""

from __future__ import annotations

import asyncio

import pytest
from probetop.probes.core.hub import Hub
from probetop.probes.core.sample import Sample, SeriesEnded, SeriesSummary, Status
from probetop.probes.core.series import GONE_AFTER_S, SeriesTracker
from probetop.probes.record.codec import decode_record, encode_record
from probetop.probes.record.linecheck import LineError, check_line

S = 1_000_000_000


def disk_sample(t_s: float, disks: dict[str, float | None]) -> Sample:
    values: dict[str, float | None] = {"busy_pct": 1.0}  # no entity: never a series
    for name, iops in disks.items():
        values[f"read_iops@{name}"] = iops
        values[f"read_lat_ms@{name}"] = None  # never a value: count 0
    return Sample("system.disk", int(t_s * S), 1.0, values)


def test_a_device_missing_from_a_whole_probe_ends_at_once_with_its_summary() -> None:
    tracker = SeriesTracker()
    tracker.watch("system.disk", whole=True)
    assert tracker.observe(disk_sample(1, {"vda": 10.0, "loop0": 3.0})) == []
    assert tracker.observe(disk_sample(2, {"vda": 10.0, "loop0": 5.0})) == []
    assert tracker.observe(disk_sample(3, {"vda": 10.0, "loop0": 10.0})) == []
    ended = tracker.observe(disk_sample(4, {"vda": 10.0}))
    # loop0 read 3, 5, 10 IO/s: mean 6, by hand
    assert ended == [
        SeriesEnded(
            "system.disk",
            4 * S,
            "loop0",
            3 * S,
            "vanished",
            {
                "read_iops": SeriesSummary(3, 3.0, 6.0, 10.0),
                "read_lat_ms": SeriesSummary(0, None, None, None),
            },
        )
    ]
    assert tracker.open_series("system.disk") == ["vda"]  # loop0's state freed
    assert tracker.observe(disk_sample(5, {"vda": 10.0})) == []  # ended once only


def test_an_entity_that_comes_back_starts_a_new_series() -> None:
    tracker = SeriesTracker()
    tracker.watch("system.disk", whole=True)
    tracker.observe(disk_sample(1, {"loop0": 100.0}))
    first = tracker.observe(disk_sample(2, {}))
    tracker.observe(disk_sample(3, {"loop0": 1.0}))
    second = tracker.observe(disk_sample(4, {}))
    assert [e.summaries["read_iops"] for e in first + second] == [
        SeriesSummary(1, 100.0, 100.0, 100.0),
        SeriesSummary(1, 1.0, 1.0, 1.0),  # nothing of the first life
    ]


def test_other_probes_end_a_series_only_after_their_samples_went_on_without_it() -> None:
    tracker = SeriesTracker()
    tracker.watch("http", whole=False)
    tracker.observe(Sample("http", 1 * S, 1.0, {"total_ms@a": 1.0, "total_ms@b": 2.0}))
    # b missing for less than the gone threshold: still open
    assert tracker.observe(Sample("http", 2 * S, 1.0, {"total_ms@a": 1.0})) == []
    late = 1 + GONE_AFTER_S
    ended = tracker.observe(Sample("http", int(late * S), 1.0, {"total_ms@a": 1.0}))
    assert [(e.entity, e.reason, e.last_ns) for e in ended] == [("b", "unseen", 1 * S)]


def test_a_probe_that_pauses_ends_nothing() -> None:
    """Only the probe's own later samples count: a 60 s sampling interval is
    not an entity gone."""
    tracker = SeriesTracker()
    tracker.watch("http", whole=False)
    tracker.observe(Sample("http", 1 * S, 60.0, {"total_ms@a": 1.0}))
    assert tracker.observe(Sample("http", 61 * S, 60.0, {"total_ms@a": 2.0})) == []


def test_the_line_round_trips_and_passes_the_line_checks() -> None:
    ended = SeriesEnded(
        "system.net", 9 * S, "veth1", 8 * S, "vanished", {"rx_pps": SeriesSummary(2, 1.0, 1.5, 2.0)}
    )
    line = encode_record(ended, 0)
    assert line == {
        "type": "series_end",
        "probe": "system.net",
        "entity": "veth1",
        "t": 9.0,
        "last_t": 8.0,
        "reason": "vanished",
        "summaries": {"rx_pps": {"count": 2, "min": 1.0, "mean": 1.5, "max": 2.0}},
    }
    assert check_line(line) == "series_end"
    assert decode_record(line) == ended


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"entity": ""}, "'entity' is not a non-empty string"),
        ({"t": -1}, "'t' is out of range"),
        ({"summaries": {"rx_pps": {"count": -1}}}, "'count' is not a whole number"),
        ({"summaries": {"rx_pps": {"count": 1, "max": "x"}}}, "'max' is not a finite number"),
        ({"summaries": {"rx_pps": 3}}, "is not an object"),
    ],
)
def test_a_bad_series_end_line_is_named(change: dict, message: str) -> None:
    line = {
        "type": "series_end",
        "probe": "system.net",
        "entity": "veth1",
        "t": 9.0,
        "last_t": 8.0,
        "reason": "vanished",
        "summaries": {},
    } | change
    with pytest.raises(LineError, match=message):
        check_line(line)


async def test_the_hub_fans_the_end_out_before_the_sample_and_forgets_a_stopped_probe() -> None:
    class Disks:
        id = kind = "system.disk"
        metrics = ()
        lists_every_entity = True

        def prepare(self) -> None: ...
        def params(self) -> dict:
            return {}

        def reference_command(self) -> None:
            return None

        def summary(self) -> dict:
            return {}

        async def run(self, emit) -> None:  # type: ignore[no-untyped-def]
            emit(disk_sample(1, {"vda": 1.0, "loop0": 1.0}))
            emit(disk_sample(2, {"vda": 1.0}))
            emit(disk_sample(3, {"vda": 1.0, "loop0": 2.0}))  # back: open at the stop

    hub = Hub()
    sub = hub.subscribe(lossless=True)
    hub.add(Disks())  # type: ignore[arg-type]
    hub.start()
    assert await hub.wait(timeout=5)
    await asyncio.sleep(0)
    records = [r for r in sub.drain() if isinstance(r, (Sample, SeriesEnded))]
    kinds = [(type(r).__name__, r.t_ns // S) for r in records]
    assert kinds == [("Sample", 1), ("SeriesEnded", 2), ("Sample", 2), ("Sample", 3)]
    assert hub.series.open_series("system.disk") == []  # freed at its stop, no record
    assert not any(isinstance(r, SeriesEnded) for r in sub.drain() if not isinstance(r, Status))
