"""`probetop report` on long recordings: the same numbers, charts thinned
without losing a spike, and the header written before the work per probe."""

from __future__ import annotations

import io
import json
from pathlib import Path

from probetop.probes.record import load_session
from probetop.tui.commands.report import all_series, envelope, metric_series, print_report

DATA = Path(__file__).resolve().parent.parent / "data"


def test_envelope_keeps_every_spike_the_ends_and_small_series() -> None:
    pts = [(float(t), 1.0) for t in range(10_000)]
    pts[4321] = (4321.0, 99.0)  # one spike
    pts[7000] = (7000.0, -5.0)  # one dip
    thin = envelope(pts, 240)
    assert len(thin) <= 2 * 240 + 2
    assert (4321.0, 99.0) in thin and (7000.0, -5.0) in thin
    assert thin[0] == pts[0] and thin[-1] == pts[-1]
    assert thin == sorted(thin)  # time order
    assert envelope(pts[:300], 240) == pts[:300]


def test_one_pass_series_equal_the_per_probe_ones() -> None:
    session = load_session(DATA / "demo_session.jsonl")
    every = all_series(session)
    assert every
    for pid in session.probes:
        assert every.get(pid, {}) == {
            key: [(float(line["t"]), float(line["values"][key])) for line in session.samples(pid)
                  if line.get("values", {}).get(key) is not None]
            for key in {k for line in session.samples(pid) for k in line.get("values", {})}
            if any(line.get("values", {}).get(key) is not None for line in session.samples(pid))
        }  # fmt: skip
        assert metric_series(session, pid) == every.get(pid, {})


class Spy(io.StringIO):
    """Remembers what had been written at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []

    def flush(self) -> None:
        self.flushed.append(self.getvalue())


def test_the_header_is_flushed_before_the_first_probe_section() -> None:
    session = load_session(DATA / "demo_session.jsonl")
    out = Spy()
    print_report(session, charts=False, out=out)
    first = out.flushed[0]
    assert first.startswith("recording ") and "\n== " not in first
    assert out.getvalue().count("\n== ") == len(session.probes)
    doc = io.StringIO()
    print_report(session, as_json=True, out=doc)
    assert set(json.loads(doc.getvalue())["probes"]) == set(session.probes)
