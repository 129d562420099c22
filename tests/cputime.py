"""Opt-in CPU and wall accounting per test (tests/conftest.py registers it
when ``PROBETOP_TESTS_CPU_LOG=DIR`` is set): one JSON line per test in
``DIR/cpu-PID.jsonl`` (one file per xdist worker) with ``self`` (the test
process: RUSAGE_SELF), ``kids`` (its children: the reaped ones' RUSAGE_CHILDREN
plus what the live ones, a zygote or a server, spent meanwhile, read from
/proc as utime+stime+cutime+cstime) and ``wall``, set-up and teardown
included, in seconds. What it is for: finding where `make test`'s CPU and
waiting go, e.g.

    PROBETOP_TESTS_CPU_LOG=/tmp/cpu nice -n 10 .venv/bin/pytest -q -n 2 -m "not serial"

then summing by file. A session fixture's cost lands on the first test that
uses it. Not seen at all: processes outside the test's process tree, which
are reparented away from it: a dashboard in a tmux server (``tmux -L``), a
detached session (``--detach``), anything that daemonizes. Their CPU still
comes out of the same cores; a cgroup sees it, e.g. as root with cgroup v1

    mkdir /sys/fs/cgroup/cpuacct/NAME; echo $$ > /sys/fs/cgroup/cpuacct/NAME/cgroup.procs
    .venv/bin/pytest ...; cat /sys/fs/cgroup/cpuacct/NAME/cpuacct.usage   # ns, all of it

(tests/tui/test_tui_jobcontrol.py, its dashboards in tmux, each running a
busy cpu probe then: 3.0 CPU-s summed here over its 15 tests, 19.7 for the
same pytest run in a cgroup, of which pytest's own start-up is about 2)."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from typing import IO

import pytest

_TICK = os.sysconf("SC_CLK_TCK")
_out: IO[str] | None = None


def _live_children_cpu() -> float:
    """CPU seconds of this process's live children and of what they reaped."""
    pid = os.getpid()
    kids: list[str] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += f.read().split()
    except OSError:
        return 0.0
    total = 0
    for kid in kids:
        try:
            with open(f"/proc/{kid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            pass  # gone meanwhile: RUSAGE_CHILDREN has it once reaped
    return total / _TICK


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = reaped.ru_utime + reaped.ru_stime + _live_children_cpu()
    return own.ru_utime + own.ru_stime, kids


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    global _out
    if _out is None:
        _out = open(  # noqa: SIM115 (kept open for the session)
            os.path.join(os.environ["PROBETOP_TESTS_CPU_LOG"], f"cpu-{os.getpid()}.jsonl"), "a"
        )
    own, kids = _cpu()
    start = time.monotonic()
    yield
    own2, kids2 = _cpu()
    row = {
        "id": item.nodeid,
        "self": round(own2 - own, 3),
        "kids": round(kids2 - kids, 3),
        "wall": round(time.monotonic() - start, 3),
    }
    _out.write(json.dumps(row) + "\n")
    _out.flush()
