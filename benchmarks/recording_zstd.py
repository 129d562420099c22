"""Compressed recordings vs plain, in the same run: size ratio, write cost, read speed.

Records `probetop demo --time S --headless` plainly (a real demo recording),
then replays its lines through both writers (one write per FLUSH_EVERY_S of
recorded time, as the live recorder does) and reads both back with
``load_session``. Prints plain/zst size ratio (target >= 5x), CPU per sample
written, and MB/s of decompressed JSONL read.

    python benchmarks/recording_zstd.py [SECONDS]   (default 30)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import at_least, report
from probetop.probes.record.linefile import LineFile
from probetop.probes.record.reader import load_session
from probetop.probes.record.writer import FLUSH_EVERY_S
from probetop.probes.record.zstdfile import ZstdLineFile


def flushes(lines: list[bytes]) -> list[bytes]:
    out, cur, bucket = [], [], None
    for line in lines:
        t = json.loads(line).get("t", 0.0)
        b = int(t / FLUSH_EVERY_S)
        if bucket is not None and b != bucket and cur:
            out.append(b"".join(cur))
            cur = []
        bucket = b
        cur.append(line)
    out.append(b"".join(cur))
    return out


def write(cls: type[LineFile], path: Path, chunks: list[bytes], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        f = cls(fd)
        t0 = time.process_time()
        for chunk in chunks:
            f.write_lines(chunk)
        f.sync_and_close()
        best = min(best, time.process_time() - t0)
    return best


def read(path: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        load_session(path)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    seconds = sys.argv[1] if len(sys.argv) > 1 else "30"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "demo.jsonl"
        subprocess.run(
            [sys.executable, "-m", "probetop.tui.main", "demo", "--time", seconds,
             "--headless", "--record", str(src)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        lines = src.read_bytes().splitlines(keepends=True)
        samples = sum(1 for line in lines if b'"type":"sample"' in line)
        chunks = flushes(lines)
        plain, zst = Path(tmp) / "p.jsonl", Path(tmp) / "z.jsonl.zst"
        w_plain = write(LineFile, plain, chunks, 5)
        w_zst = write(ZstdLineFile, zst, chunks, 5)
        raw = plain.stat().st_size
        r_plain, r_zst = read(plain, 5), read(zst, 5)
        mb = raw / 1e6
        print(f"demo recording: {seconds} s, {len(lines)} lines, {samples} samples, "
              f"{len(chunks)} flushes, {raw} bytes plain")  # fmt: skip
        print(f"size      plain {raw:>9} B   zst {zst.stat().st_size:>9} B   "
              f"ratio {raw / zst.stat().st_size:.2f}x (target >= 5x)")  # fmt: skip
        report(
            f"demo recording of {seconds} s",
            "size, plain / zst",
            raw / zst.stat().st_size,
            unit="x",
            goal=at_least(5, of="probetop"),
        )
        report(
            f"demo recording of {seconds} s",
            "write CPU per sample",
            w_zst / samples * 1e6,
            w_plain / samples * 1e6,
            unit="us",
            reference_tool="the plain writer",
        )
        report(
            f"demo recording of {seconds} s",
            "read (load_session)",
            mb / r_zst,
            mb / r_plain,
            unit="MB/s",
            reference_tool="the plain file",
        )
        print(f"write CPU plain {w_plain / samples * 1e6:7.2f} us/sample   "
              f"zst {w_zst / samples * 1e6:7.2f} us/sample   "
              f"ratio {w_zst / w_plain:.2f}x")  # fmt: skip
        print(f"read      plain {mb / r_plain:7.1f} MB/s   zst {mb / r_zst:7.1f} MB/s "
              f"(decompressed JSONL, load_session)   ratio {r_plain / r_zst:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
