"""The seq loops of sysbench's binary and of the engine's JIT code, read
with objdump: what tests/mem/test_mem_layout.py and
benchmarks/mem_loop_alignment.py compare.

Contract:
- ``sysbench_event(oper)``: (address, instruction) rows of sysbench 1.0.20's
  ``event_seq_<oper>`` (Debian's build: the static functions by address;
  None when the installed binary is another build);
- ``disassemble(address)``: the same rows of this process's memory (the
  engine's JIT code) up to the first ``ret``;
- ``loop_head(rows)``: the unrolled loop's head (the target of the last
  backward conditional jump); ``trip(rows, head)``: its instructions;
  ``shape(text)``: an instruction without its register names and jump
  target, so two trips compare instruction for instruction.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import tempfile

# sysbench 1.0.20 (Debian's build): its static seq events, by address
SYSBENCH_EVENTS = {"read": 0x1A860, "write": 0x1A940}
SYSBENCH_BUILD_ID = "eeda85f4e3654fde6e9ab5bf1e1b9964166f4cfe"

_ROW = re.compile(r"\s*([0-9a-f]+):\s+(.*)$")


def _rows(objdump_out: str) -> list[tuple[int, str]]:
    rows = []
    for line in objdump_out.splitlines():
        m = _ROW.match(line)
        if m:
            text = re.sub(r"\s+<.*>$", "", m.group(2).strip())
            rows.append((int(m.group(1), 16), text))
            if text.startswith("ret"):
                break
    return rows


def sysbench_build_id() -> str | None:
    path = shutil.which("sysbench")
    if path is None or shutil.which("file") is None:
        return None
    out = subprocess.run(["file", "-L", path], capture_output=True, text=True).stdout
    m = re.search(r"BuildID\[sha1\]=([0-9a-f]+)", out)
    return m.group(1) if m else None


def sysbench_event(oper: str) -> list[tuple[int, str]] | None:
    if sysbench_build_id() != SYSBENCH_BUILD_ID:
        return None
    start = SYSBENCH_EVENTS[oper]
    out = subprocess.run(
        [
            "objdump",
            "-d",
            "--no-show-raw-insn",
            f"--start-address={start:#x}",
            f"--stop-address={start + 0x1A0:#x}",
            str(shutil.which("sysbench")),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return _rows(out)


def disassemble(address: int, size: int = 800) -> list[tuple[int, str]]:
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(ctypes.string_at(address, size))
        f.flush()
        cmd = ["objdump", "-D", "-b", "binary", "-mi386:x86-64", "--no-show-raw-insn"]
        out = subprocess.run(
            [*cmd, f"--adjust-vma={address}", f.name], capture_output=True, text=True, check=True
        ).stdout
    return _rows(out)


def loop_head(rows: list[tuple[int, str]]) -> int:
    for at, text in reversed(rows):
        m = re.match(r"j(?:b|a|ne|l|g)\s+(?:0x)?([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < at:
            return int(m.group(1), 16)
    raise RuntimeError("no loop found")


def trip(rows: list[tuple[int, str]], head: int) -> list[str]:
    body = [text for at, text in rows if at >= head]
    end = next(i for i, t in enumerate(body) if re.match(r"j(?:b|a)\s", t))
    return body[: end + 1]


def shape(text: str) -> str:
    """``text`` with every register written ``%r`` and a conditional jump
    as ``jcc`` (sysbench's ``cmp end, p; ja`` is the engine's ``cmp p, end;
    jb``): the instruction, its width and its addressing, whatever registers
    and addresses each compiler picked."""
    if text.startswith("j"):
        return "jcc"
    op, _, args = text.partition(" ")
    return f"{op} {re.sub(r'%[a-z0-9]+', '%r', args.strip())}"
