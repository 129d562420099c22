"""LiveEcho: a stdout that refuses a write ends the echo, never the run."""

from __future__ import annotations

import contextlib
import errno
import io
from pathlib import Path

import pytest
from probetop.probes.core.sample import Sample
from probetop.tui.run.liveecho import LiveEcho


def sample(probe: str, n: int) -> Sample:
    return Sample(probe, n, 1.0, {"x": float(n)})


def test_lines_of_its_probes_only_in_order() -> None:
    out = io.StringIO()
    echo = LiveEcho(lambda: "head\n", lambda s: [f"[ {s.t_ns}s ]"], ["cpu"], out)
    echo.started()
    for s in (sample("cpu", 1), sample("system.cpu", 2), sample("cpu", 3)):
        echo.sample(s)
    assert out.getvalue() == "head\n[ 1s ]\n[ 3s ]\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_ends_the_echo_without_raising() -> None:
    full = open("/dev/full", "w")  # noqa: SIM115 (closed below, its error expected)
    echo = LiveEcho(lambda: "head\n", lambda s: ["line"], ["cpu"], full)
    echo.started()  # the flush fails: ENOSPC, kept, not raised
    echo.sample(sample("cpu", 1))
    assert echo.failed is not None and echo.failed.errno == errno.ENOSPC
    with contextlib.suppress(OSError):  # the unwritten buffer fails again
        full.close()
