"""Peak memory of reading recordings: a large valid one and hostile inputs.

Used by tests/record/test_record_reader.py (small sizes) and runnable by
hand for the numbers in docs/reliability-record.md:

    .venv/bin/python tests/record/record_memory.py --mib 200 --dir /tmp

Each case runs ``probetop report --no-charts --json`` (or ``replay
--headless``) in a child process with a time limit and prints its exit
status, peak RSS (ru_maxrss of the child) and wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo_session.jsonl"
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def write_long_recording(path: Path, target_bytes: int, source: Path = DEMO) -> int:
    """A valid recording of about ``target_bytes``: the demo session's body
    repeated with its time stamps shifted, then its footer. Returns lines."""
    rows = source.read_text().splitlines()
    header, body, footer = rows[0], [json.loads(r) for r in rows[1:-1]], json.loads(rows[-1])
    span = max(float(line.get("t", 0.0)) for line in body) + 1.0
    lines = 1
    with path.open("w") as f:
        f.write(header + "\n")
        written = len(header) + 1
        shift = 0.0
        while written < target_bytes:
            for line in body:
                if line.get("type") == "probe":
                    continue  # announce each added probe once
                moved = dict(line, t=round(float(line["t"]) + shift, 6))
                text = json.dumps(moved, separators=(",", ":")) + "\n"
                f.write(text)
                written += len(text)
                lines += 1
            shift += span
        footer["duration_s"] = shift
        f.write(json.dumps(footer, separators=(",", ":")) + "\n")
    return lines + 1


BOMBS = ("objects", "arrays", "keys", "floats", "strings")


def bomb_row(case: str, i: int) -> bytes:
    """One valid ~1 MiB sample line whose ``extra`` is as costly in memory
    per byte on disk as JSON allows."""
    n = 250_000
    if case == "objects":
        extra = b'{"a":[' + b"{}," * n + b"{}]}"
    elif case == "arrays":
        extra = b'{"a":[' + b"[]," * n + b"[]]}"
    elif case == "keys":  # distinct keys: none can be shared
        extra = b"{" + b",".join(b'"%x":0' % (i * n + k) for k in range(n // 3)) + b"}"
    elif case == "floats":
        extra = b'{"a":[' + b",".join(b"%d.5" % k for k in range(n // 2)) + b"]}"
    else:  # strings: 1000 distinct 1000-character strings
        extra = b'{"a":[' + b",".join(b'"%0999x"' % (i * 1000 + k) for k in range(1000)) + b"]}"
    return b'{"type":"sample","probe":"x","t":%d,"values":{},"extra":%s}\n' % (i, extra)


def write_bomb(path: Path, case: str, lines: int = 250) -> None:
    """A header and ``lines`` bomb rows (about ``lines`` MiB)."""
    with path.open("wb") as f:
        f.write(DEMO.read_bytes().split(b"\n", 1)[0] + b"\n")
        for i in range(lines):
            f.write(bomb_row(case, i))


PEAK_WRAPPER = (
    "import sys\nfrom probetop.tui.main import main\ncode = 1\n"
    "try:\n    code = main(sys.argv[1:])\n"
    "finally:\n"
    "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
    "    print('PEAK', hwm.split()[1], file=sys.stderr)\n"
    "sys.exit(code)"
)
"""Runs probetop and prints its own peak RSS (VmHWM belongs to the memory of
the exec'd program; ru_maxrss would also count the process it was forked
from)."""


def peak_rss(args: list[str], timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    """(finished process with the PEAK line removed from stderr, peak RSS MiB)."""
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_WRAPPER, *args], capture_output=True, text=True, timeout=timeout
    )
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK")]
    proc.stderr = "\n".join(
        line for line in proc.stderr.splitlines() if not line.startswith("PEAK")
    )
    return proc, (int(peak[0].split()[1]) / 1024 if peak else float("nan"))


def measure(args: list[str], timeout: float = 300.0) -> dict[str, float | int | str]:
    """Run probetop ``args`` in a child; its exit code, peak RSS and time."""
    started = time.monotonic()
    proc, peak = peak_rss(args, timeout)
    return {
        "rc": proc.returncode,
        "peak_rss_mib": round(peak, 1),
        "seconds": round(time.monotonic() - started, 2),
        "stderr": proc.stderr.strip()[-200:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=100.0, help="size of the valid recording")
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument(
        "--case", choices=("valid", "zero", "urandom", "longline", *BOMBS), default=None
    )
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir=opts.dir, prefix="probetop-mem-"))
    try:
        cases = [opts.case] if opts.case else ["zero", "urandom", "longline", *BOMBS, "valid"]
        for case in cases:
            if case == "valid":
                path = work / "long.jsonl"
                n = write_long_recording(path, int(opts.mib * (1 << 20)))
                size = path.stat().st_size / (1 << 20)
                result = measure(["report", "--no-charts", "--json", str(path)])
                print(f"valid {size:.0f} MiB, {n} lines: {result}")
                result = measure(["replay", "--headless", str(path)])
                print(f"valid replay --headless: {result}")
            elif case in ("zero", "urandom"):
                result = measure(["replay", "--headless", f"/dev/{case}"], timeout=30)
                print(f"/dev/{case}: {result}")
            elif case == "longline":
                path = work / "longline.jsonl"
                with path.open("wb") as f:
                    f.write(DEMO.read_bytes().split(b"\n", 1)[0] + b"\n")
                    f.truncate(64 << 20)  # 64 MiB of NUL bytes, no newline
                result = measure(["replay", "--headless", str(path)], timeout=30)
                print(f"64 MiB line: {result}")
            else:
                path = work / f"{case}.jsonl"
                write_bomb(path, case)
                size = path.stat().st_size / (1 << 20)
                result = measure(["replay", "--headless", str(path)])
                print(f"{case} ({size:.0f} MiB): {result}")
    finally:
        for child in work.iterdir():
            child.unlink()
        os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
