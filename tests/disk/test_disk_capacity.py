"""What the machine can hold for a disk run (probes/disk/capacity.py): the
limits read by core's ``MachineLimits`` (the one reader), the disk family's
rules and messages."""

from __future__ import annotations

import pytest
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.machine import MachineLimits
from probetop.probes.disk.capacity import CapacityError, available_memory, check

ROOMY = MachineLimits(uid=1000, mem_available=64 << 30)


def test_a_run_that_fits_passes() -> None:
    check(jobs=4, iodepth=32, bs=1 << 20, machine=ROOMY)


@pytest.mark.parametrize(
    ("machine", "said"),
    [
        (
            MachineLimits(uid=1000, nproc_soft=100, user_tasks=97),
            "your process limit RLIMIT_NPROC (ulimit -u) is 100 and 97 threads of yours",
        ),
        (
            MachineLimits(uid=1000, threads_max=500, tasks_now=498),
            "the kernel's threads-max is 500 and 498 threads are running",
        ),
        (
            MachineLimits(uid=1000, pid_max=32768, tasks_now=32766),
            "the kernel's pid_max is 32768 and 32766 threads are running",
        ),
        (
            MachineLimits(uid=1000, cgroup_pids=(64, 62)),
            "this cgroup's pids.max is 64 and 62 are in use",
        ),
    ],
)
def test_threads_that_do_not_fit_are_refused_naming_the_limit(
    machine: MachineLimits, said: str
) -> None:
    with pytest.raises(CapacityError, match=r"^--jobs 4 needs 4 I/O threads, but ") as err:
        check(jobs=4, iodepth=1, bs=4096, machine=machine)
    assert said in str(err.value) and str(err.value).endswith("Lower --jobs.")
    assert isinstance(err.value, UsageProbeError)  # exit 2, one line


def test_root_is_not_held_to_rlimit_nproc() -> None:
    check(jobs=4, iodepth=1, bs=4096, machine=MachineLimits(uid=0, nproc_soft=1, user_tasks=50))


def test_buffers_over_half_the_available_memory_are_refused() -> None:
    machine = MachineLimits(uid=1000, mem_available=1 << 30, cgroup_memory=(8 << 30, 7 << 30))
    assert available_memory(machine) == (1 << 30, "MemAvailable")
    tight = MachineLimits(uid=1000, mem_available=8 << 30, cgroup_memory=(2 << 30, 1 << 30))
    assert available_memory(tight) == (1 << 30, "this cgroup's memory.max less memory.current")
    with pytest.raises(CapacityError) as err:
        check(jobs=2, iodepth=64, bs=4 << 20, machine=machine)
    assert str(err.value) == (
        "--jobs 2 x --iodepth 64 x --bs 4.0 MiB need 514.0 MiB of I/O buffers; 1.0 GiB is "
        "available (MemAvailable) and probetop uses at most 50% of it. Lower --jobs, "
        "--iodepth or --bs."
    )


def test_an_io_bigger_than_64_mib_is_refused() -> None:
    with pytest.raises(CapacityError, match=r"^--bs 128\.0 MiB is larger than 64\.0 MiB"):
        check(jobs=1, iodepth=1, bs=128 << 20, machine=ROOMY)
