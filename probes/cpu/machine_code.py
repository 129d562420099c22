"""The event's divide loop as machine code, ours and sysbench's, side by side.

Used by tests/cpu and benchmarks/cpu_*.py (not by the probe at run time): it
disassembles, with binutils' ``objdump``, the installed sysbench binary and
the bytes the JIT put in memory for our event, finds in each the innermost
loop that holds the division (the shortest cycle of basic blocks through the
block with the divide), and describes it: the instructions in order, the
division (mnemonic, operand width), the square root and the conversion of
``l`` to double. Two events cost the same on every CPU when these loops are
the same instructions; that is the property the tests check.

Contract:
- ``sysbench_event_loop(path)``, ``engine_event_loop(engine)`` and
  ``object_event_loop(obj)`` return an ``EventLoop`` or raise
  ``MachineCodeUnavailable`` (no objdump, no sysbench, an architecture
  objdump cannot read, no loop found); ``describe`` renders one for a report.
- Works on x86-64 (AT&T syntax) and aarch64 objdump output.
"""

from __future__ import annotations

import ctypes
import heapq
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class MachineCodeUnavailable(RuntimeError):
    """The loop cannot be read on this machine (the message says why)."""


@dataclass(frozen=True)
class Instruction:
    address: int
    mnemonic: str
    operands: str  # as objdump prints them, branch targets and comments cut

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.operands}".strip()


@dataclass(frozen=True)
class Division:
    mnemonic: str  # div / idiv (x86), udiv / sdiv (aarch64)
    bits: int  # operand width: 64 or 32 (16, 8)
    signed: bool

    def __str__(self) -> str:
        return f"{self.mnemonic} ({self.bits}-bit, {'signed' if self.signed else 'unsigned'})"


@dataclass(frozen=True)
class EventLoop:
    """The innermost loop around the divide, from its lowest address on."""

    instructions: tuple[Instruction, ...]
    division: Division
    divisions: tuple[Division, ...]  # every divide in the loop's address range
    taken_branches: int  # jumps taken per trip round the loop
    sqrt: str | None  # the square root instruction before the loop (its type)
    conversion: str | None  # how l becomes a double inside the loop

    @property
    def mnemonics(self) -> tuple[str, ...]:
        return tuple(i.mnemonic for i in self.instructions)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(i.text for i in self.instructions)

    @property
    def shapes(self) -> tuple[str, ...]:
        """The instructions with registers replaced by their kind and width
        (``div r64``, ``cvtsi2sd r64,xmm``): equal shapes in equal order are
        the same work, whatever registers each compiler picked."""
        return tuple(_shape(i) for i in self.instructions)


_REG_KINDS = (
    (re.compile(r"%r(?:[a-d]x|[sd]i|[sb]p|8|9|1[0-5])\b(?![dwb])"), "r64"),
    (re.compile(r"%(?:e(?:[a-d]x|[sd]i|[sb]p)|r(?:8|9|1[0-5])d)\b"), "r32"),
    (re.compile(r"%(?:[a-d]l|[sd]il|[sb]pl|r(?:8|9|1[0-5])b)\b"), "r8"),
    (re.compile(r"%[xyz]mm\d+"), "xmm"),
    (re.compile(r"\bx(?:\d+|zr)\b"), "x"),
    (re.compile(r"\bw(?:\d+|zr)\b"), "w"),
    (re.compile(r"\bd\d+\b"), "d"),
    (re.compile(r"\bs\d+\b"), "s"),
)


def _shape(ins: Instruction) -> str:
    ops = ins.operands.replace(" ", "")
    for pattern, kind in _REG_KINDS:
        ops = pattern.sub(kind, ops)
    return f"{ins.mnemonic} {ops}".strip()


_X86_REG64 = re.compile(r"^%r(?:[a-d]x|[sd]i|[sb]p|8|9|1[0-5])$")
_X86_REG32 = re.compile(r"^%(?:e(?:[a-d]x|[sd]i|[sb]p)|r(?:8|9|1[0-5])d)$")
_X86_REG16 = re.compile(r"^%(?:[a-d]x|[sd]i|[sb]p|r(?:8|9|1[0-5])w)$")


def _division(ins: Instruction) -> Division | None:
    m = ins.mnemonic
    if m in ("udiv", "sdiv"):  # aarch64: udiv xd, xn, xm
        reg = ins.operands.split(",")[0].strip()
        return Division(m, 64 if reg.startswith("x") else 32, m == "sdiv")
    base = m.rstrip("bwlq") if m not in ("div", "idiv") else m
    if base not in ("div", "idiv"):
        return None
    op = ins.operands.split(",")[0].strip()
    suffix = {"b": 8, "w": 16, "l": 32, "q": 64}
    if m != base:
        bits = suffix[m[-1]]
    elif _X86_REG64.match(op):
        bits = 64
    elif _X86_REG32.match(op):
        bits = 32
    elif _X86_REG16.match(op):
        bits = 16
    else:
        bits = 8 if op.endswith(("l", "h")) else 0
    return Division(base, bits, base == "idiv")


def _is_sqrt(ins: Instruction) -> bool:
    return "sqrt" in ins.mnemonic


def _is_conversion(ins: Instruction) -> bool:
    m = ins.mnemonic
    return m.startswith(("cvt", "vcvt", "ucvtf", "scvtf")) or m in ("punpckldq", "vpunpckldq")


# ---- objdump -----------------------------------------------------------------

_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")


def _objdump() -> str:
    path = shutil.which("objdump")
    if path is None:
        raise MachineCodeUnavailable("objdump is not installed (binutils)")
    return path


def _parse(listing: str) -> list[Instruction]:
    out = []
    for line in listing.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        mnemonic, rest = m.group(2), m.group(3)
        if mnemonic in ("(bad)", "...") or mnemonic.startswith("."):
            continue
        # comments: x86 "  # 270c9 <...>", aarch64 "  // #1"; aarch64 immediates
        # are "#0x1" (no space after the #), so they stay
        rest = re.sub(r"\s*//.*$", "", re.sub(r"\s+#\s.*$", "", rest)).strip()
        out.append(Instruction(int(m.group(1), 16), mnemonic, rest))
    return out


def _target(ins: Instruction) -> int | None:
    """The address a direct branch goes to, else None."""
    m = re.search(r"(?:^|[ ,])(?:0x)?([0-9a-f]+) <[^>]*>$", ins.operands)
    if m is None:
        m = re.search(r"(?:^|[ ,])(?:0x)?([0-9a-f]+)$", ins.operands)
    if m is None or not _is_branch(ins):
        return None
    return int(m.group(1), 16)


def _is_branch(ins: Instruction) -> bool:
    m = ins.mnemonic
    if m.startswith("j"):  # x86
        return True
    return m == "b" or m.startswith(("b.", "cbz", "cbnz", "tbz", "tbnz"))  # aarch64


def _is_unconditional(ins: Instruction) -> bool:
    return ins.mnemonic in ("jmp", "jmpq", "b", "ret", "retq", "br", "ud2", "brk")


def _branch_text(ins: Instruction) -> str:
    """Operands without the target, for comparing branches: ``jb``, ``cbnz x1``."""
    if not _is_branch(ins):
        return ins.operands
    parts = [p.strip() for p in re.sub(r"\s*<[^>]*>$", "", ins.operands).split(",")]
    return ", ".join(parts[:-1])


def _loop_around(
    instrs: Sequence[Instruction], div_index: int
) -> tuple[list[list[Instruction]], int] | None:
    """The shortest cycle of basic blocks through the divide's block (by
    instructions executed): its blocks in the order of the cycle, and how many
    of its steps are taken jumps (not a fall-through to the next block)."""
    lo, hi = max(0, div_index - 120), min(len(instrs), div_index + 120)
    window = list(instrs[lo:hi])
    at = {ins.address: i for i, ins in enumerate(window)}
    leaders = {0}
    for i, ins in enumerate(window):
        if _is_branch(ins) or _is_unconditional(ins):
            leaders.add(i + 1)
            t = _target(ins)
            if t is not None and t in at:
                leaders.add(at[t])
    starts = sorted(x for x in leaders if x < len(window))
    blocks = [window[s:e] for s, e in zip(starts, [*starts[1:], len(window)], strict=True)]
    block_at = {b[0].address: k for k, b in enumerate(blocks)}
    succ: list[list[int]] = []
    for k, b in enumerate(blocks):
        last, nxt = b[-1], []
        t = _target(last)
        if t is not None and t in block_at:
            nxt.append(block_at[t])
        if not _is_unconditional(last) and k + 1 < len(blocks):
            nxt.append(k + 1)
        succ.append(nxt)
    div_block = next(k for k, b in enumerate(blocks) if instrs[div_index] in b)
    # Dijkstra from the divide's block's successors back to it.
    best: dict[int, int] = {}
    prev: dict[int, int] = {}
    heap: list[tuple[int, int, int]] = []
    for s in succ[div_block]:
        heapq.heappush(heap, (len(blocks[s]), s, div_block))
    while heap:
        cost, k, p = heapq.heappop(heap)
        if k in best:
            continue
        best[k], prev[k] = cost, p
        if k == div_block:
            break
        for s in succ[k]:
            if s not in best:
                heapq.heappush(heap, (cost + len(blocks[s]), s, k))
    if div_block not in best:
        return None
    path = [div_block]
    k = prev[div_block]
    while k != div_block:
        path.append(k)
        k = prev[k]
    path.reverse()  # div_block ... last block before coming back
    taken = sum(1 for a, b in zip(path, [*path[1:], path[0]], strict=True) if b != a + 1)
    return [blocks[k] for k in path], taken


def _event_loop(instrs: Sequence[Instruction], what: str) -> EventLoop:
    for i, ins in enumerate(instrs):
        div = _division(ins)
        if div is None:
            continue
        before = instrs[max(0, i - 40) : i]
        sqrts = [x for x in before if _is_sqrt(x)]
        if not sqrts:
            continue
        found = _loop_around(instrs, i)
        if found is None:
            continue
        cycle, taken = found
        flat = [x for block in cycle for x in block]
        first = min(range(len(cycle)), key=lambda k: cycle[k][0].address)
        ordered = [x for block in cycle[first:] + cycle[:first] for x in block]
        conversions = [x for x in flat if _is_conversion(x)]
        lo, hi = min(x.address for x in flat), max(x.address for x in flat)
        divisions = [_division(x) for x in instrs if lo <= x.address <= hi]
        return EventLoop(
            instructions=tuple(
                Instruction(x.address, x.mnemonic, _branch_text(x)) for x in ordered
            ),
            division=div,
            divisions=tuple(d for d in divisions if d is not None),
            taken_branches=taken,
            sqrt=f"{sqrts[-1].mnemonic} {sqrts[-1].operands}",
            conversion=" + ".join(x.mnemonic for x in conversions) or None,
        )
    raise MachineCodeUnavailable(f"no divide loop after a square root found in {what}")


def sysbench_event_loop(path: str | None = None) -> EventLoop:
    """The loop in the installed sysbench (``cpu_execute_event``)."""
    binary = path or shutil.which("sysbench")
    if binary is None:
        raise MachineCodeUnavailable("sysbench is not installed")
    out = subprocess.run(
        [_objdump(), "-d", "--no-show-raw-insn", binary],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise MachineCodeUnavailable(f"objdump cannot read {binary}: {out.stderr.strip()}")
    return _event_loop(_parse(out.stdout), binary)


_OBJDUMP_ARCH = {"x86_64": "i386:x86-64", "aarch64": "aarch64", "arm64": "aarch64"}


def _symbol_size(obj: bytes, name: str) -> int:
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj)
        f.flush()
        out = subprocess.run(
            [_objdump(), "-t", f.name], capture_output=True, text=True, check=False
        ).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[-1] == name and len(fields) >= 2:
            return int(fields[-2], 16)
    raise MachineCodeUnavailable(f"no symbol {name} in the JIT's object")


def engine_event_loop(engine: Any) -> EventLoop:
    """The loop in the machine code the JIT put in memory for ``engine``'s
    event (a ``NativeEngine``), disassembled from memory."""
    arch = _OBJDUMP_ARCH.get(platform.machine())
    if arch is None:
        raise MachineCodeUnavailable(f"no objdump architecture for {platform.machine()}")
    size = _symbol_size(engine.object_code(), "prime_event")
    address = engine.event_address()
    code = ctypes.string_at(address, size)
    fd, path = tempfile.mkstemp(suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(code)
        out = subprocess.run(
            [
                _objdump(),
                "-D",
                "-b",
                "binary",
                "-m",
                arch,
                f"--adjust-vma={address:#x}",
                "--no-show-raw-insn",
                path,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(path)
    if out.returncode != 0:
        raise MachineCodeUnavailable(f"objdump cannot read the JIT's code: {out.stderr.strip()}")
    return _event_loop(_parse(out.stdout), "the JIT's event")


def object_event_loop(obj: bytes, objdump: str | None = None) -> EventLoop:
    """The loop in an ELF object (e.g. the IR compiled for another CPU with
    ``target_machine.emit_object``): what that CPU would run, without running
    it. ``objdump``: another architecture's (``aarch64-linux-gnu-objdump``)."""
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj)
        f.flush()
        out = subprocess.run(
            [objdump or _objdump(), "-d", "--no-show-raw-insn", f.name],
            capture_output=True,
            text=True,
            check=False,
        )
    if out.returncode != 0:
        raise MachineCodeUnavailable(f"objdump cannot read the object: {out.stderr.strip()}")
    return _event_loop(_parse(out.stdout), "the object")


def describe(loop: EventLoop) -> str:
    """One line: the loop's instructions, divide, taken branches and alignment."""
    return (
        f"{len(loop.instructions)} instructions: {' | '.join(loop.texts)}; "
        f"divide {' + '.join(str(d) for d in loop.divisions)}; "
        f"{loop.taken_branches} taken branch(es) per divide; "
        f"starts at {loop.instructions[0].address % 64:#04x} mod 64"
    )
