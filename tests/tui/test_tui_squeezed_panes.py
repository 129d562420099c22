"""Every row of a squeezed pane is readable at 80x24, and nothing is lost at
120x40 (issue 29, the terminal's view): a real terminal (tmux) running the
real command.

Before: at 80x24 the layout gave the cpu pane four rows, and its per-thread
and per-core columns were cut from the bottom, so at best their heading
showed ("events per thread (interval)  busy % ...") with no number under it;
the mem pane showed "operations per thread (interval)" and no thread. At
120x40 the warm-up's FRESH VOLUME advice, one long sentence, was cropped
mid-word ("the volume answers with ze")."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from privilege import needs_icmp
from test_tui_jobcontrol import EXE, shell, wait

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "disk"))
from disk_fixtures import loop_device


def pane(text: str) -> list[str]:
    """The first pane's rows inside its border (the probe's own pane)."""
    rows = text.splitlines()
    top = next(i for i, row in enumerate(rows) if row.startswith("┏"))
    bottom = next(i for i, row in enumerate(rows) if row.startswith("┗"))
    return [row.strip("┃ ") for row in rows[top + 1 : bottom]]


def test_the_cpu_pane_at_80x24_shows_its_per_thread_and_core_figures() -> None:
    with shell([EXE, "cpu", "--threads", "2", "--time", "0"], width=80, height=24) as tmux:
        text = wait(
            tmux,
            lambda s: re.search(r"per thread \(interval\) t0 [\d,]+  t1 [\d,]+", s) is not None,
            "the per-thread figures in the squeezed cpu pane",
        )
        text = wait(tmux, lambda s: "busy cpu0 " in s, "the cores' busy % beside them")
        rows = pane(text)
        assert re.search(r"busy cpu0 +\d+(\.\d)?%", " ".join(rows)), text
        # no heading without its figures, no hint the key bar already gives
        assert not any(row.startswith(("events per thread", "busy %")) for row in rows), text
        assert "(e: what is one event?)" not in text
        assert all(len(row) <= 80 for row in text.splitlines())


def test_the_mem_pane_at_80x24_shows_every_threads_operations() -> None:
    with shell([EXE, "mem", "--threads", "2", "--time", "0"], width=80, height=24) as tmux:
        text = wait(
            tmux,
            lambda s: re.search(r"t0 [\d,]+  t1 [\d,]+", s) is not None,
            "both threads' operations in the squeezed mem pane",
        )
        rows = pane(text)
        assert "operations per thread (interval)" not in rows, text  # a heading alone


def test_the_mem_pane_at_80x24_summarises_twelve_threads() -> None:
    """`mem --threads 12 --rate 300`: the per-thread view was not shown at
    all (its line came after a headline that wrapped, cut from the bottom),
    and the headline said "avg lat 0.00 ms" for operations of a microsecond."""
    command = [EXE, "mem", "--threads", "12", "--rate", "300", "--time", "0"]
    with shell(command, width=80, height=24) as tmux:
        text = wait(
            tmux,
            lambda s: (
                re.search(r"per thread (\(interval\) )?min \d+ max \d+ \(12 threads\)", s)
                is not None
            ),
            "the twelve threads' spread in the squeezed mem pane",
        )
        text = wait(tmux, lambda s: re.search(r"avg lat \d", s) is not None, "the latency")
        assert re.search(r"avg lat [\d.]+ (ns|µs|ms)", text), text
        assert "avg lat 0.00" not in text, text
        assert all(len(row) <= 80 for row in text.splitlines())


def test_at_120x40_the_cpu_pane_keeps_its_full_columns() -> None:
    with shell([EXE, "cpu", "--threads", "2", "--time", "0"], width=120, height=40) as tmux:
        text = wait(
            tmux,
            lambda s: re.search(r"t1 +█*\S* +\d+ +cpu1 ", s) is not None,
            "the full per-thread and per-core columns",
        )
        rows = pane(text)
        heading = "events per thread (interval)  busy % (all processes)"
        assert any(row.startswith(heading) for row in rows), text
        assert "(e: what is one event?)" in text


@pytest.mark.parametrize("size", [(120, 40)])
def test_the_fresh_volume_advice_wraps_whole(size: tuple[int, int]) -> None:
    with (
        loop_device(64 << 20) as dev,  # never written: a fresh volume
        shell([EXE, "warmup", dev], width=size[0], height=size[1]) as tmux,
    ):
        wait(tmux, lambda s: "FRESH VOLUME" in s, "the FRESH VOLUME advice")
        text = wait(tmux, lambda s: "stopped: finished" in s, "the pass's end")
        said = " ".join(" ".join(pane(text)).split())
        assert "the volume answers with zeros without allocating anything" in said, text
        assert "Press W to switch to it now." in said, text


@needs_icmp
def test_the_icmp_pane_at_80x24_shows_the_rtt() -> None:
    """Three sparkline rows and one for the table: the RTT line first (it
    was the socket mode's line, and no RTT anywhere on the screen)."""
    with shell([EXE, "icmp", "127.0.0.1"], width=80, height=24) as tmux:
        text = wait(
            tmux,
            lambda s: re.search(r"RTT µs min/avg/max/mdev [\d.]+/", s) is not None,
            "the RTT line in the squeezed icmp pane",
        )
        assert re.search(r"p50/p90/p99 [\d.]+/[\d.]+/[\d.]+", " ".join(pane(text))), text


def test_the_http_pane_at_80x24_says_its_errors() -> None:
    """Half the requests answered 404: the "!! errors" line first, where
    the pane's rows end (cut from the bottom, it never showed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        run = [EXE, "http", "--watch", f"{base}/", f"{base}/nonexistent"]
        with shell(run, width=80, height=24) as tmux:
            text = wait(
                tmux,
                lambda s: re.search(r"!! errors \d+\.\d %   2xx/3xx \d+  4xx [1-9]", s) is not None,
                "the error share in the squeezed http pane",
            )
            assert "Traceback" not in text
    finally:
        server.kill()
        server.wait()
