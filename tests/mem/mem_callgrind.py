"""Instructions per operation with valgrind's callgrind: the one runner that
tests/mem/test_mem_instructions.py, benchmarks/mem_vs_sysbench.py
(--instructions) and benchmarks/mem_instructions_by_function.py share.

Contract:
- ``run_callgrind(cmd, out)`` runs ``cmd`` under callgrind, one output file
  per thread (``out-NN``), and returns each thread's count; thread 1 is the
  main thread. Numpy's OpenBLAS threads are kept out and the hash seed fixed,
  so a Python start-up is the same every run.
- ``busiest(counts, n)``: the ``n`` worker threads that ran the most
  instructions (the main thread left out).
- ``sysbench_fixed_work(...)``: a ``sysbench memory`` command that does
  exactly ``ops`` operations per thread under a --time never reached, so
  every operation reads the clock as in a timed run. Two such runs (N1 and
  N2 operations) give instructions per operation with start-up cancelled:
  ``per_operation``.
The benchmarks import it from here (``sys.path``): benchmarks/ is not a
package the tests can import.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

FIXED_WORK_TIME_S = 100_000  # a --time never reached: the clock is read every operation


@dataclass(frozen=True)
class ThreadCount:
    """One thread's instructions, as callgrind counted them."""

    number: int  # callgrind's thread number: 1 is the main thread
    instructions: int
    path: Path  # its callgrind output file (for callgrind_annotate)


# Python source defining ``start_instrumentation()``: callgrind's client
# request CALLGRIND_START_INSTRUMENTATION (valgrind/callgrind.h), issued from
# Python through a few bytes of x86-64 machine code (valgrind.h's amd64
# special-instruction preamble, then ``xchg rbx, rbx``; natively it does
# nothing). For ``run_callgrind(..., instr_atstart=False)``: a Python program
# runs its start-up (imports, the engine's LLVM build) uninstrumented, about
# ten times faster under valgrind than counted, and counts from the call on.
START_INSTRUMENTATION_SRC = """
import ctypes, mmap, platform
def start_instrumentation():
    assert platform.machine() == "x86_64", platform.machine()
    code = bytes.fromhex(
        "4889f8" "31d2"  # mov rax, rdi (the request's words); xor edx, edx
        "48c1c703" "48c1c70d" "48c1c73d" "48c1c733"  # rol rdi, 3, 13, 61, 51
        "4887db" "4889d0" "c3")  # xchg rbx, rbx (the request); mov rax, rdx; ret
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    request = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)(address)
    words = (ctypes.c_uint64 * 6)((ord("C") << 24 | ord("T") << 16) + 4)  # START_INSTRUMENTATION
    request(ctypes.addressof(words))
    start_instrumentation.keep = (page, request)
"""


def run_callgrind(
    cmd: list[str], out: Path, *, timeout: float | None = None, instr_atstart: bool = True
) -> list[ThreadCount]:
    """Run ``cmd`` under callgrind; every thread's count, by thread number.
    ``instr_atstart=False``: nothing is counted until the program calls
    ``start_instrumentation()`` (``START_INSTRUMENTATION_SRC``)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    for old in out.parent.glob(out.name + "-*"):
        old.unlink()  # a file left by an earlier run would be counted again
    valgrind = ["valgrind", "--tool=callgrind", "--separate-threads=yes"]
    if not instr_atstart:
        valgrind.append("--instr-atstart=no")
    subprocess.run(
        [*valgrind, f"--callgrind-out-file={out}", *cmd],
        capture_output=True,
        env=env,
        check=True,
        timeout=timeout,
    )
    counts = []
    for path in out.parent.glob(out.name + "-*"):
        found = re.search(r"^(?:totals|summary):\s+(\d+)", path.read_text(), re.M)
        if found:
            number = int(path.name.rsplit("-", 1)[1])
            counts.append(ThreadCount(number, int(found.group(1)), path))
    return sorted(counts, key=lambda c: c.number)


def busiest(counts: list[ThreadCount], n: int) -> list[ThreadCount]:
    """The ``n`` worker threads that ran the most (thread 1, the main, left out)."""
    workers = sorted((c for c in counts if c.number != 1), key=lambda c: -c.instructions)
    if len(workers) < n:
        raise RuntimeError(f"callgrind counted {len(workers)} worker threads, wanted {n}")
    return workers[:n]


def sysbench_fixed_work(
    *,
    ops: int,
    block: int,
    oper: str = "write",
    mode: str = "seq",
    percentile: float = 95,
    threads: int = 1,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """``sysbench memory`` doing exactly ``ops`` operations per thread."""
    return [
        "sysbench",
        "memory",
        f"--time={FIXED_WORK_TIME_S}",
        f"--threads={threads}",
        f"--memory-block-size={block}",
        f"--memory-total-size={ops * block * threads}",
        f"--memory-oper={oper}",
        f"--memory-access-mode={mode}",
        f"--percentile={percentile:g}",
        *extra,
        "run",
    ]


def per_operation(first: int, second: int, n1: int, n2: int) -> float:
    """Instructions per operation from runs of n1 and n2 operations."""
    return (second - first) / (n2 - n1)
