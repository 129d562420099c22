"""The CPU event engines: right prime counts, sysbench's codegen, sysbench's histogram."""

from __future__ import annotations

import math
import platform
import subprocess
import sys

import pytest
from probetop.probes.core.sysbench.counters import STAT_EVENTS
from probetop.probes.core.sysbench.hist import (
    HIST_SIZE,
    bucket_of,
    bucket_value_ms,
    histogram_of,
    percentile_ms,
)
from probetop.probes.cpu.engine import (
    STAT_PRIMES,
    NativeEngine,
    PythonEngine,
    SharedRun,
    ThreadJob,
    load_engine,
)
from probetop.probes.cpu.event_code import (
    EVENT_SYSBENCH_X86_64,
    event_ir,
)


def sieve_count(max_prime: int) -> int:
    """Primes in 3..max_prime-1 by Eratosthenes: independent of trial division."""
    if max_prime <= 3:
        return 0
    flags = bytearray([1]) * max_prime
    flags[0:2] = b"\x00\x00"
    for i in range(2, math.isqrt(max_prime - 1) + 1):
        if flags[i]:
            flags[i * i :: i] = bytearray(len(flags[i * i :: i]))
    return sum(flags[3:])


@pytest.fixture(scope="module")
def native() -> NativeEngine:
    engine = load_engine("llvm")
    assert isinstance(engine, NativeEngine)
    return engine


def test_sieve_agrees_with_the_issue_figures() -> None:
    assert sieve_count(10000) == 1228
    assert sieve_count(64000) == 6412


@pytest.mark.parametrize("max_prime", [10000, 64000])
def test_native_event_counts_primes_like_a_sieve(native: NativeEngine, max_prime: int) -> None:
    assert native.prime_event(max_prime) == sieve_count(max_prime)


def test_native_event_small_limits(native: NativeEngine) -> None:
    # 3, 4, 5 ... are where the peeled l = 2 step and t < 2 edge live.
    for max_prime in range(3, 200):
        assert native.prime_event(max_prime) == sieve_count(max_prime), max_prime


def test_unpeeled_variant_counts_the_same() -> None:
    """The study variant (l starts at 2, as the C source reads) is the same event."""
    plain = NativeEngine(event_code="ir", peel_first_divisor=False)
    for max_prime in (3, 4, 5, 6, 7, 8, 9, 10, 11, 1000, 10000):
        assert plain.prime_event(max_prime) == sieve_count(max_prime), max_prime


def test_python_engine_counts_the_same() -> None:
    engine = PythonEngine()
    for max_prime in (3, 4, 5, 10, 97, 1000):
        assert engine.prime_event(max_prime) == sieve_count(max_prime)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="checks x86 machine code")
def test_x86_event_is_sysbench_gcc_loop_on_every_cpu(native: NativeEngine) -> None:
    """On x86-64 the event is sysbench's assembly, whatever the host CPU."""
    assert native.event_code == EVENT_SYSBENCH_X86_64
    assert "module asm" in event_ir(code=EVENT_SYSBENCH_X86_64)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="checks x86 machine code")
def test_ir_variant_keeps_the_64_bit_divide() -> None:
    """The IR (the study variant on x86, the event elsewhere) divides with a
    64-bit divq: LLVM's idivq-to-divl bypass is switched off."""
    ir = NativeEngine(event_code="ir")
    asm = ir.asm()
    event = asm[asm.index("prime_event:") : asm.index(".Lfunc_end0")]
    assert "divq" in event
    assert "divl" not in event
    assert "-idivq-to-divl" in ir.features


@pytest.mark.skipif(platform.machine() != "x86_64", reason="checks x86 machine code")
def test_bypass_on_would_add_a_32_bit_divide() -> None:
    """The flag we clear is the one that matters: with it on, divl appears."""
    fast = NativeEngine(event_code="ir", feature_overrides=("+idivq-to-divl",))
    asm = fast.asm()
    event = asm[asm.index("prime_event:") : asm.index(".Lfunc_end0")]
    assert "divl" in event


@pytest.mark.parametrize("max_prime", [3, 4, 5, 4097, 4098, 8193, 10000, 64000])
def test_ir_and_shipped_event_agree(native: NativeEngine, max_prime: int) -> None:
    """Chunk edges of the stop-flag poll (every 4096 c) lose no c."""
    ir = load_ir_engine()
    assert native.prime_event(max_prime) == ir.prime_event(max_prime) == sieve_count(max_prime)


_ir_engine: list[NativeEngine] = []


def load_ir_engine() -> NativeEngine:
    if not _ir_engine:
        _ir_engine.append(NativeEngine(event_code="ir"))
    return _ir_engine[0]


def test_prime_event_stops_on_the_flag(native: NativeEngine) -> None:
    """The shipped event polls the stop flag (per 4096 c chunk) and returns -1."""
    import ctypes

    stop = ctypes.c_int32(1)
    assert native.prime_event(10000, stop) == -1
    stop.value = 0
    assert native.prime_event(10000, stop) == 1228


def test_run_events_honours_the_event_budget(native: NativeEngine) -> None:
    shared = SharedRun(max_prime=2000, max_events=57)
    jobs = [ThreadJob(shared) for _ in range(3)]
    for job in jobs:  # sequentially: the budget is shared, not per thread
        native.run_events(job)
    assert sum(j.stats[STAT_EVENTS] for j in jobs) == 57
    assert sum(sum(j.hist) for j in jobs) == 57
    assert jobs[0].stats[STAT_PRIMES] == sieve_count(2000)


def test_run_events_stops_on_the_flag(native: NativeEngine) -> None:
    shared = SharedRun(max_prime=2000)
    shared.request_stop()
    job = ThreadJob(shared)
    assert native.run_events(job) == 1
    assert job.stats[STAT_EVENTS] == 0


def test_bucket_formula_matches_sysbench() -> None:
    mult = (HIST_SIZE - 1) / (math.log(100000.0) - math.log(0.001))
    for ms in (0.001, 0.0123, 0.33, 0.37, 4.41, 99.0, 12345.0):
        expected = math.floor((math.log(ms) - math.log(0.001)) * mult + 0.5)
        assert bucket_of(ms) == expected
    assert bucket_of(0.0) == 0
    assert bucket_of(1e-9) == 0
    assert bucket_of(1e9) == HIST_SIZE - 1
    # sysbench prints bucket values: 0.37 and 4.41 ms are ones it printed here.
    assert f"{bucket_value_ms(bucket_of(0.37)):.2f}" == "0.37"
    assert f"{bucket_value_ms(bucket_of(4.41)):.2f}" == "4.41"


def test_percentile_walks_buckets_like_sysbench() -> None:
    hist = histogram_of([0.3] * 95 + [4.0] * 5)
    low, high = bucket_value_ms(bucket_of(0.3)), bucket_value_ms(bucket_of(4.0))
    assert percentile_ms(hist, 95) == low  # floor(100 * 0.95 + 0.5) = 95 events reached
    assert percentile_ms(hist, 96) == high
    assert percentile_ms(hist, 100) == high
    assert percentile_ms([0] * HIST_SIZE, 95) is None
    # a percentile is always a bucket value, never an interpolation
    assert percentile_ms(histogram_of([0.31, 0.35]), 50) == bucket_value_ms(bucket_of(0.31))


def test_cpu_probe_module_imports_no_llvm_until_used() -> None:
    code = (
        "import sys, probetop.probes.cpu.probe\n"
        "from probetop.tui.commands import load; load('cpu')\n"
        "print('llvmlite' in sys.modules, 'numba' in sys.modules, 'textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_event_code_by_platform() -> None:
    from probetop.probes.cpu.event_code import EVENT_IR, default_event_code

    assert default_event_code("x86_64-unknown-linux-gnu") == EVENT_SYSBENCH_X86_64
    assert default_event_code("aarch64-unknown-linux-gnu") == EVENT_IR
    assert default_event_code("x86_64-apple-darwin23.0.0") == EVENT_IR  # Mach-O: no .type/.size
