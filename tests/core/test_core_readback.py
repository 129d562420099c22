"""The tolerant readers every family's records share: typed value or None, never raise."""

from __future__ import annotations

import math

import pytest
from probetop.probes.core.readback import as_count, as_int, as_number, as_text, fits

HOSTILE = [None, True, False, "7", b"7", [], {}, math.nan, math.inf, -math.inf, 10**400, 1e308]


@pytest.mark.parametrize("value", HOSTILE)
def test_readers_never_raise(value: object) -> None:
    for reader in (as_number, as_count, as_int, as_text):
        reader(value)
    fits(value, (int, float))


def test_a_bool_is_never_a_number() -> None:
    assert as_number(True) is None and as_count(True) is None and as_int(False) is None
    assert not fits(True, (int,)) and fits(True, (bool, int))


def test_values_read_back_typed() -> None:
    assert as_count(3.9) == 3 and as_count(math.inf) is None and as_count(math.nan) is None
    assert as_int(3) == 3 and as_int(3.0) is None
    assert as_number(2) == 2.0 and isinstance(as_number(2), float)
    assert as_text("x") == "x" and as_text(1) is None
