"""Every family's typed records read any recorded value without raising
(probes/core/readback.py's contract): a recording edited by hand, cut by a
crash or written by another version may hold Infinity, NaN, a number past
float's range, a string where a count was, and replay, report, compare and
export must still read it.

Before this test, cpu, mem, http and http-load intervals raised
OverflowError/ValueError on an infinite or NaN count (``int(float)``), so
`probetop report` of such a file ended in a traceback.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from probetop.probes.core.sample import Sample
from probetop.probes.registry import all_families

HOSTILE: tuple[Any, ...] = (
    math.inf,
    -math.inf,
    math.nan,
    10**400,  # JSON has no limit; float() of it overflows
    -(10**400),
    -1,
    1e308,
    "12",
    None,
    True,
    [],
    {},
    [math.inf, math.nan],
    {"n": [math.nan], "sum_us": math.inf},
)


class _Everything(dict[str, Any]):
    """A mapping that answers every key with one value: reaches each key a
    reader looks up, whatever its name."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value

    def get(self, key: Any, default: Any = None) -> Any:
        return self.value

    def __getitem__(self, key: Any) -> Any:
        return self.value

    def __contains__(self, key: object) -> bool:
        return True


def _record_classes() -> list[Any]:
    out = []
    for family in all_families():
        records = getattr(family, "records", None)
        if records is not None:
            out.extend(records())
    return out


RECORDS = _record_classes()


def test_every_family_with_records_is_covered() -> None:
    kinds = {record.KIND for record in RECORDS}
    assert {"cpu", "mem", "iops", "warmup", "icmp", "http", "http.load"} <= kinds, kinds


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_hostile_value_is_read_not_raised(record: Any, value: Any) -> None:
    named = {spec.name: value for spec in record.METRICS}
    for values, extra in (
        (_Everything(value), _Everything(value)),
        (_Everything(value), {}),
        (named, _Everything(value)),
        (named, {}),
    ):
        interval_s = value if isinstance(value, float) else 0.0  # inf, nan and 0 s too
        for seconds in (1.0, interval_s):
            record.from_sample(Sample("probe", 1, seconds, values, extra))
