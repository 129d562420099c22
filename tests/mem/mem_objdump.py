"""The seq loops of sysbench's binary and of the engine's JIT code, read
with objdump: what tests/mem/test_mem_layout.py and
benchmarks/mem_loop_alignment.py compare.

Contract:
- ``sysbench_event(oper)``: (address, instruction) rows of sysbench 1.0.20's
  ``event_seq_<oper>`` (Debian's build: the static functions by address;
  None when the installed binary is another build);
- ``disassemble(address)``: the same rows of this process's memory (the
  engine's JIT code) up to the first ``ret``;
- ``sysbench_thread_run()``: the rows of sysbench's worker loop (its
  ``thread_run``, inlined in the worker thread's function), None as above;
- ``event_copy(rows)``: where the event returned by ``next_event`` is
  copied from and to, and where its type is read (stack offsets);
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
from dataclasses import dataclass

# sysbench 1.0.20 (Debian's build): its static seq events, by address
SYSBENCH_EVENTS = {"read": 0x1A860, "write": 0x1A940}
SYSBENCH_THREAD_RUN = (0xC600, 0xC800)  # worker_thread, thread_run inlined
SYSBENCH_BUILD_ID = "eeda85f4e3654fde6e9ab5bf1e1b9964166f4cfe"

_ROW = re.compile(r"\s*([0-9a-f]+):\s+(.*)$")


def _rows(objdump_out: str, *, to_ret: bool = True) -> list[tuple[int, str]]:
    rows = []
    for line in objdump_out.splitlines():
        m = _ROW.match(line)
        if m:
            text = re.sub(r"\s+<.*>$", "", m.group(2).strip())
            rows.append((int(m.group(1), 16), text))
            if to_ret and text.startswith("ret"):
                break
    return rows


def sysbench_build_id() -> str | None:
    path = shutil.which("sysbench")
    if path is None or shutil.which("file") is None:
        return None
    out = subprocess.run(["file", "-L", path], capture_output=True, text=True).stdout
    m = re.search(r"BuildID\[sha1\]=([0-9a-f]+)", out)
    return m.group(1) if m else None


def _sysbench_rows(start: int, stop: int, *, to_ret: bool) -> list[tuple[int, str]] | None:
    if sysbench_build_id() != SYSBENCH_BUILD_ID:
        return None
    out = subprocess.run(
        [
            "objdump",
            "-d",
            "--no-show-raw-insn",
            f"--start-address={start:#x}",
            f"--stop-address={stop:#x}",
            str(shutil.which("sysbench")),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return _rows(out, to_ret=to_ret)


def sysbench_event(oper: str) -> list[tuple[int, str]] | None:
    start = SYSBENCH_EVENTS[oper]
    return _sysbench_rows(start, start + 0x1A0, to_ret=True)


def sysbench_thread_run() -> list[tuple[int, str]] | None:
    # its first ret (the start-up's early exit) comes before the event loop
    return _sysbench_rows(*SYSBENCH_THREAD_RUN, to_ret=False)


_STACK = re.compile(r"(-?0x[0-9a-f]+)?\(%rsp\)")


def _stack_offset(operand: str) -> int | None:
    m = _STACK.fullmatch(operand.strip())
    return None if m is None else int(m.group(1) or "0", 16)


@dataclass(frozen=True)
class EventCopy:
    """The 48-byte event after ``next_event`` returns it: the stack offsets
    its 16-byte copy reads and writes, and where the type (its first 4
    bytes) is then read."""

    source: frozenset[int]
    copy: frozenset[int]
    type_read: int


def event_copy(rows: list[tuple[int, str]]) -> EventCopy:
    """The first call followed by 16-byte loads from the stack (the copy of
    the returned event), up to the conditional jump on its type."""
    texts = [text for _, text in rows]
    for i, text in enumerate(texts):
        if not text.startswith("call") or i + 1 >= len(texts):
            continue
        if not re.match(r"mov(?:dqu|aps|ups) [^,]*\(%rsp\),%xmm", texts[i + 1]):
            continue
        source: set[int] = set()
        copy: set[int] = set()
        type_read = None
        for after in texts[i + 1 :]:
            op, _, args = after.partition(" ")
            parts = [a.strip() for a in re.split(r",(?![^(]*\))", args)]
            if op in ("movdqu", "movaps", "movups"):
                src, dst = parts
                if src.startswith("%xmm"):
                    copy.add(_stack_offset(dst) or 0)
                else:
                    source.add(_stack_offset(src) or 0)
            elif op in ("mov", "movl", "cmpl") and len(parts) == 2 and type_read is None:
                # gcc: mov (%rsp),%edx then test; LLVM: cmpl $0x0,off(%rsp)
                at = _stack_offset(parts[0] if op == "mov" else parts[1])
                if at is not None and (op != "mov" or parts[1].startswith("%e")):
                    type_read = at
            elif op.startswith("j"):
                break
        if type_read is None:
            raise RuntimeError(f"no 4-byte type read after the call at {text!r}")
        return EventCopy(frozenset(source), frozenset(copy), type_read)
    raise RuntimeError("no copy of a returned event found")


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
