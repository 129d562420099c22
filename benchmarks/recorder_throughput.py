#!/usr/bin/env python3
"""The recorder and replay against a plain ``json`` baseline, in one run (issue 15).

Figures, each printed next to its baseline (3 rounds, ours and the baseline
alternated; medians and ranges):

- encode: lines made by ``encode_record`` + ``dump_line_bytes`` (orjson when
  it provably gives the stdlib's bytes) vs ``encode_record`` + the stdlib
  ``json`` path, on one core (process CPU time). A *sample* is one value of
  one metric of one probe in one interval (one sparkline point: an entry of
  a sample line's ``values``, null included); records are lines.
- decode: ``load_session`` MB/s of JSONL (CPU time: decode + every check +
  the ``Session`` built; not freeing it) vs the same reader with its fast
  paths (and its garbage-collector pause) turned off: every line through
  ``json`` and the reference checks; also ``json.loads`` alone, no checks,
  and where the time goes (parts of the fast path left out).
- first frame: ``probetop replay REC`` in a real terminal (a private tmux
  server, 120x40) until the dashboard shows its panes (it opens on the
  recording's head and reads the rest behind the first frame), and
  ``probetop report REC`` until its first byte and until it exits (the
  report needs every sample: totals), on a 1-hour recording; the baseline
  runs the same command with the reader's fast paths turned off and, for
  replay, the whole file read before the dashboard opens (as before).
- zstd: the size ratio of the recording written through the ``.zst``
  writer (the bytes are the same with either encoder).

The 1-hour recording is synthesised: a real ``probetop demo`` recording of
SECONDS (default 60) repeated with its time stamps shifted to 3600 s
(its footer is the short run's: a real hour's footer is larger).

    python benchmarks/recorder_throughput.py [--seconds 60] [--source REC.jsonl]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from figures import Goal, add_figures_option, at_least, at_most, report
from probetop.probes.core.sample import Record, Sample
from probetop.probes.record import linecheck, load_session, reader
from probetop.probes.record.codec import _stdlib_line, decode_record, dump_line_bytes, encode_record
from probetop.probes.record.writer import FLUSH_EVERY_S
from probetop.probes.record.zstdfile import ZstdLineFile

REPO = Path(__file__).resolve().parent.parent
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
ROUNDS = 3
HOUR_S = 3600.0
# The same command with the reader's fast paths off (every line through json)
# and, for replay, the whole recording read before the dashboard opens (as
# before it streamed).
BASELINE = (
    "import sys; from probetop.probes.record import linecheck, reader; "
    "import contextlib; reader.decode_block = lambda raws, data=None: None; "
    "linecheck._fast_line = lambda raw: None; reader._gc_paused = contextlib.nullcontext; "
    "from probetop.tui.commands import replay; replay.HEAD_BYTES = 1 << 62; "
    "from probetop.tui.main import entry; sys.argv[0] = 'probetop'; entry()"
)
# Ours, but the whole recording read before the dashboard opens: what the
# streaming replay saves, apart from the faster reader.
WHOLE_FIRST = (
    "import sys; from probetop.tui.commands import replay; replay.HEAD_BYTES = 1 << 62; "
    "from probetop.tui.main import entry; sys.argv[0] = 'probetop'; entry()"
)
TMUX = f"recread-bench-{os.getpid()}"


# -- inputs ----------------------------------------------------------------------


def demo_recording(seconds: str, where: Path) -> Path:
    path = where / "demo.jsonl"
    subprocess.run(
        [*PROBETOP, "demo", "--time", seconds, "--headless", "--record", str(path)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return path


def one_hour(source: Path, path: Path) -> int:
    """``source`` repeated, time stamps shifted, until it spans an hour. Lines."""
    rows = source.read_bytes().splitlines()
    header, body = rows[0], [json.loads(r) for r in rows[1:]]
    footer = body.pop() if body and body[-1].get("type") == "footer" else None
    span = max(float(line.get("t", 0.0)) for line in body) + 0.5
    lines, shift = 1, 0.0
    with path.open("wb") as f:
        f.write(header + b"\n")
        while shift < HOUR_S:
            for line in body:
                if shift and line.get("type") == "probe":
                    continue  # each added probe is announced once
                moved = dict(line, t=round(float(line["t"]) + shift, 6))
                f.write(json.dumps(moved, separators=(",", ":")).encode() + b"\n")
                lines += 1
            shift += span
        if footer is not None:
            footer["duration_s"] = shift
            f.write(json.dumps(footer, separators=(",", ":")).encode() + b"\n")
            lines += 1
    return lines


# -- measuring -------------------------------------------------------------------


def rounds(cases: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """Each case ROUNDS times, the cases alternated within a round."""
    out: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, case in cases.items():
            out[name].append(case())
    return out


def cpu(fn: Callable[[], object]) -> float:
    """Process CPU seconds of ``fn()``; what it returns is freed after the
    clock stops (freeing a session is not reading it)."""
    t0 = time.process_time()
    kept = fn()
    spent = time.process_time() - t0
    del kept
    return spent


def show(
    label: str,
    ours: list[float],
    base: list[float],
    unit: str,
    *,
    higher: bool,
    goal: Goal | None = None,
) -> None:
    """Print a figure beside its baseline; the ratio is how many times better
    ours is (baseline / ours for a time). ``goal``: on ours' own value."""
    mo, mb = statistics.median(ours), statistics.median(base)
    ratio = mo / mb if higher else mb / mo
    report(
        label,
        "",
        mo,
        mb,
        unit=unit,
        ratio=ratio,
        goal=goal,
        reference_tool="the plain json path",
        note=f"ratio: times better than plain json; range {min(ours):.4g}..{max(ours):.4g}",
    )
    print(
        f"{label:34s} ours {mo:12,.2f} {unit} [{min(ours):,.2f}..{max(ours):,.2f}]   "
        f"json {mb:12,.2f} {unit} [{min(base):,.2f}..{max(base):,.2f}]   {ratio:5.2f}x"
    )


@contextlib.contextmanager
def reference_reader() -> Iterator[None]:
    saved = reader.decode_block, linecheck._fast_line, reader._gc_paused
    reader.decode_block = lambda raws, data=None: None  # type: ignore[assignment]
    linecheck._fast_line = lambda raw: None  # type: ignore[assignment]
    reader._gc_paused = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        reader.decode_block, linecheck._fast_line, reader._gc_paused = saved


@contextlib.contextmanager
def decode_block_as(fn: Callable[..., object]) -> Iterator[None]:
    saved = reader.decode_block
    reader.decode_block = fn  # type: ignore[assignment]
    try:
        yield
    finally:
        reader.decode_block = saved


def where_the_time_goes(hour: Path, size: int) -> None:
    """load_session with parts of decode_block left out, in one run (best of
    ROUNDS; CPU ms): what reading the blocks costs, what msgspec's typed
    decode alone costs (its objects dropped), and the rest (keeping them as
    the lines, the byte screens, the weights)."""
    from probetop.probes.record import fastpath

    def read_only(raws: list[bytes], data: bytes | None = None) -> object:
        return [], 0

    def decode_only(raws: list[bytes], data: bytes | None = None) -> object:
        decode = fastpath._DECODER.decode
        try:
            return [decode(raw) for raw in raws] and ([], 0)
        except Exception:
            return None

    def best(fn: Callable[..., object] | None) -> float:
        runs = []
        for _ in range(ROUNDS):
            if fn is None:
                runs.append(cpu(lambda: load_session(hour)))
            else:
                with decode_block_as(fn):
                    runs.append(cpu(lambda: load_session(hour)))
        return min(runs) * 1000

    whole, read, decoded = best(None), best(read_only), best(decode_only)
    print(f"{'':34s} where the time goes (best of {ROUNDS}, CPU ms): "
          f"read + split into lines {read:.0f}, msgspec typed decode {decoded - read:.0f}, "
          f"lines kept + extras screened + weighed {whole - decoded:.0f}; "
          f"all {whole:.0f} ms = {size / 1e6 / whole * 1000:.0f} MB/s")  # fmt: skip


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", TMUX, *args], check=True, capture_output=True, text=True
    ).stdout


@contextlib.contextmanager
def tmux_server() -> Iterator[None]:
    """A private tmux server kept up by an idle session: a server whose last
    session just ended is still exiting when the next new-session comes."""
    tmux("new-session", "-d", "-s", "keep", "-x", "120", "-y", "40", "sleep 3600")
    try:
        yield
    finally:
        subprocess.run(["tmux", "-L", TMUX, "kill-server"], capture_output=True)


def replay_first_frame(command: list[str], name: str) -> float:
    """Seconds from starting ``command`` in a 120x40 tmux pane until the
    replay's status line and its first pane are on the screen."""
    shell = shlex.join(command) + "; sleep 60"
    t0 = time.perf_counter()
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", shell)
    try:
        deadline = t0 + 30
        while time.perf_counter() < deadline:
            screen = tmux("capture-pane", "-p", "-t", name)
            if "replay" in screen and "╭─ system.cpu" in screen:
                return time.perf_counter() - t0
            time.sleep(0.01)
        raise RuntimeError(f"no first frame in 30 s:\n{screen}")
    finally:
        subprocess.run(["tmux", "-L", TMUX, "kill-session", "-t", name], capture_output=True)


def report_times(command: list[str]) -> tuple[float, float]:
    """(seconds to the first byte of output, seconds to exit)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.read(1)
    first = time.perf_counter() - t0
    proc.stdout.read()
    if proc.wait() != 0:
        raise RuntimeError(f"{command} failed")
    return first, time.perf_counter() - t0


def zstd_size(plain: Path, zst: Path) -> int:
    lines = plain.read_bytes().splitlines(keepends=True)
    fd = os.open(zst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    f = ZstdLineFile(fd)
    chunk: list[bytes] = []
    bucket = None
    for line in lines:  # one write per FLUSH_EVERY_S of recorded time, as live
        b = int(json.loads(line).get("t", 0.0) / FLUSH_EVERY_S)
        if bucket is not None and b != bucket and chunk:
            f.write_lines(b"".join(chunk))
            chunk = []
        bucket = b
        chunk.append(line)
    f.write_lines(b"".join(chunk))
    f.sync_and_close()
    return zst.stat().st_size


# -- main ------------------------------------------------------------------------


def main() -> None:
    global ROUNDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", default="60", help="length of the demo recording made")
    parser.add_argument("--source", type=Path, help="use this recording instead of making one")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of each figure")
    add_figures_option(parser)
    args = parser.parse_args()
    ROUNDS = args.rounds
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        source = args.source or demo_recording(args.seconds, tmp)
        hour = tmp / "hour.jsonl"
        n_lines = one_hour(source, hour)
        size = hour.stat().st_size
        print(f"source: {source} ({source.stat().st_size:,} B); 1-hour recording: "
              f"{n_lines:,} lines, {size / 1e6:.1f} MB (synthesised: the source "
              "time-shifted)")  # fmt: skip

        # encode: the live recorder's records, rebuilt from the short recording
        objs = [json.loads(r) for r in source.read_bytes().splitlines()[1:]]
        records: list[Record] = [r for r in map(decode_record, objs) if r is not None]
        records = records * max(1, 20_000 // max(1, len(records)))
        values = sum(len(r.values) for r in records if isinstance(r, Sample))
        nulls = sum(v is None for r in records if isinstance(r, Sample) for v in r.values.values())
        out_bytes = sum(len(dump_line_bytes(encode_record(r, 0))) for r in records)
        enc = rounds({
            "ours": lambda: cpu(lambda: [dump_line_bytes(encode_record(r, 0)) for r in records]),
            "json": lambda: cpu(lambda: [_stdlib_line(encode_record(r, 0)) for r in records]),
        })  # fmt: skip
        print(f"\nencode: {len(records):,} records, {values:,} samples "
              f"({nulls / max(1, values):.0%} null), {out_bytes / 1e6:.1f} MB, "
              "one core")  # fmt: skip
        show(
            "encode samples/s",
            [values / s for s in enc["ours"]],
            [values / s for s in enc["json"]],
            "samples/s",
            higher=True,
            goal=at_least(500_000, of="probetop"),
        )
        show("encode records/s", [len(records) / s for s in enc["ours"]],
             [len(records) / s for s in enc["json"]], "records/s", higher=True)  # fmt: skip
        show("encode MB/s", [out_bytes / 1e6 / s for s in enc["ours"]],
             [out_bytes / 1e6 / s for s in enc["json"]], "MB/s", higher=True)  # fmt: skip

        # decode: the whole hour, checked
        def reference() -> float:
            with reference_reader():
                return cpu(lambda: load_session(hour))

        raw_lines = hour.read_bytes().splitlines()
        dec = rounds({
            "ours": lambda: cpu(lambda: load_session(hour)),
            "json": reference,
            "loads": lambda: cpu(lambda: [json.loads(r) for r in raw_lines]),
        })  # fmt: skip
        print(f"\ndecode: load_session of the 1-hour recording ({size / 1e6:.1f} MB), one core")
        show(
            "decode MB/s (every line checked)",
            [size / 1e6 / s for s in dec["ours"]],
            [size / 1e6 / s for s in dec["json"]],
            "MB/s",
            higher=True,
            goal=at_least(200, of="probetop"),
        )
        loads = statistics.median(size / 1e6 / s for s in dec["loads"])
        print(f"{'':34s} (json.loads alone, no checks: {loads:,.1f} MB/s)")
        where_the_time_goes(hour, size)

        # zstd
        zst = tmp / "hour.jsonl.zst"
        zsize = zstd_size(hour, zst)
        short_zst = zstd_size(source, tmp / "short.jsonl.zst")
        print(f"\nzstd: 1-hour {size:,} B -> {zsize:,} B = {size / zsize:.1f}x "
              f"(repetitive: synthesised); the real {args.seconds} s recording "
              f"{source.stat().st_size:,} B -> {short_zst:,} B = "
              f"{source.stat().st_size / short_zst:.1f}x (target >= 5x; same bytes with either "
              "encoder)")  # fmt: skip
        report(
            f"zstd size ratio, the real {args.seconds} s demo recording",
            "times smaller",
            source.stat().st_size / short_zst,
            unit="x",
            goal=at_least(5, of="probetop"),
        )
        zdec = rounds({
            "ours": lambda: cpu(lambda: load_session(zst)),
            "json": lambda: reference_zst(zst),
        })  # fmt: skip
        show("decode .zst MB/s (decompressed)", [size / 1e6 / s for s in zdec["ours"]],
             [size / 1e6 / s for s in zdec["json"]], "MB/s", higher=True)  # fmt: skip

        # first frames, in real processes
        ours_cmd = [*PROBETOP, "replay", str(hour)]
        base_cmd = [sys.executable, "-c", BASELINE, "replay", str(hour)]
        whole_cmd = [sys.executable, "-c", WHOLE_FIRST, "replay", str(hour)]
        # The dashboard's own start-up, measured the same way on a 10 s recording.
        short = tmp / "short.jsonl"
        rows = source.read_bytes().splitlines(keepends=True)
        short.write_bytes(
            b"".join(rows[:1] + [r for r in rows[1:] if json.loads(r).get("t", 0) <= 10])
        )
        with tmux_server():
            frames = rounds({
                "ours": lambda: replay_first_frame(ours_cmd, "ours"),
                "json": lambda: replay_first_frame(base_cmd, "json"),
                "short": lambda: replay_first_frame([*PROBETOP, "replay", str(short)], "short"),
                "whole": lambda: replay_first_frame(whole_cmd, "whole"),
            })  # fmt: skip
        print("\nfirst frame on the 1-hour recording (wall seconds, a real process each)")
        show(
            "replay: first frame (tmux 120x40)",
            frames["ours"],
            frames["json"],
            "s",
            higher=False,
            goal=at_most(1.0, of="probetop"),
        )
        floor, whole = frames["short"], frames["whole"]
        print(f"{'':34s} (the same on a 10 s recording, the dashboard's start-up: "
              f"{statistics.median(floor):.2f} s [{min(floor):.2f}..{max(floor):.2f}]; "
              f"ours reading the whole hour first, not streaming: "
              f"{statistics.median(whole):.2f} s [{min(whole):.2f}..{max(whole):.2f}])"
              )  # fmt: skip
        for flag in ([], ["--no-charts"]):
            rep = rounds({
                "ours": lambda flag=flag: report_times([*PROBETOP, "report", *flag, str(hour)]),
                "json": lambda flag=flag: report_times(
                    [sys.executable, "-c", BASELINE, "report", *flag, str(hour)]),
            })  # type: ignore[misc]  # fmt: skip
            name = "report" + (" --no-charts" if flag else "")
            show(
                f"{name}: first byte",
                [a for a, _ in rep["ours"]],
                [a for a, _ in rep["json"]],
                "s",
                higher=False,
                goal=None if flag else at_most(1.0, of="probetop"),
            )
            show(f"{name}: done (totals)", [b for _, b in rep["ours"]],
                 [b for _, b in rep["json"]], "s", higher=False)  # fmt: skip


def reference_zst(path: Path) -> float:
    with reference_reader():
        return cpu(lambda: load_session(path))


if __name__ == "__main__":
    main()
