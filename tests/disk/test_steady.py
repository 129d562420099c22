"""Steady-state detection: synthetic series, every criterion, and fio's own decision."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess

import pytest
from probetop.probes.core.base import UsageProbeError
from probetop.probes.disk.warmup.steady import SteadyState


def feed(ss: SteadyState, iops: list[float], bs: int = 4096, t0: float = 1.0) -> list[tuple]:
    """Feed 1 s samples; return [(t, transition)] for every transition."""
    transitions, done = [], 0
    for i, value in enumerate(iops):
        t = t0 + i
        done += int(value * bs)
        event = ss.add(t, value, value * bs, done)
        if event:
            transitions.append((t, event))
    return transitions


# ------------------------------------------------------------------ parsing


def test_parse_forms() -> None:
    ss = SteadyState.parse("iops_slope:0.01%", window_s=30)
    assert (ss.criterion, ss.limit, ss.percent, ss.window_n) == ("iops_slope", 0.01, True, 30)
    ss = SteadyState.parse("bw:1m", window_s=5)
    assert (ss.criterion, ss.limit, ss.percent) == ("bw", 1024 * 1024, False)
    assert SteadyState.parse("bw_slope:512KiB", 5).limit == 512 * 1024
    assert SteadyState.parse("iops:20", 5).limit == 20
    assert SteadyState.parse("IOPS:2.5 %", 5).percent


@pytest.mark.parametrize(
    "spec", ["", "iops", "iops:", "lat:5%", "iops_slope:abc", "iops:-1", "iops:0", "bw:3x", "x:1"]
)
def test_bad_specs_name_the_valid_forms(spec: str) -> None:
    with pytest.raises(UsageProbeError, match=re.escape("iops_slope:0.01%")):
        SteadyState.parse(spec, window_s=10)


def test_window_too_short_for_a_slope() -> None:
    with pytest.raises(UsageProbeError, match="at least 2"):
        SteadyState.parse("iops_slope:1%", window_s=1)
    assert SteadyState.parse("iops:1%", window_s=1).window_n == 1


# ------------------------------------------------------------------ synthetic series


def test_ramp_then_flat_reached_when_the_window_is_all_flat() -> None:
    ss = SteadyState.parse("iops_slope:0.01%", window_s=5)
    series = [min(10.0 * t, 200.0) for t in range(1, 40)]  # flat from t=20
    transitions = feed(ss, series)
    assert transitions == [(24.0, "reached")]
    assert ss.reached_at_s == 24.0
    assert ss.reached_at_bytes == sum(int(v * 4096) for v in series[:24])
    assert ss.left_at_s is None and ss.state == "steady"


def test_flat_then_drop_is_left_at_the_first_failing_sample() -> None:
    ss = SteadyState.parse("iops_slope:0.5%", window_s=6)
    series = [1000.0] * 10 + [400.0] * 20
    transitions = feed(ss, series)
    # Reached at t=6; the drop arrives at t=11 and fails the slope from then on;
    # "left" is reported after half a window of failures, dated t=11; once the
    # window is all 400s (t=16) the new plateau is reached.
    assert transitions == [(6.0, "reached"), (13.0, "left"), (16.0, "reached")]
    assert ss.left_at_s == 11.0
    assert [e.reached_at_s for e in ss.episodes] == [6.0, 16.0]
    assert ss.episodes[1].mean == 400.0
    assert ss.as_dict()["left_at_s"] == 11.0


def test_brief_slope_failures_do_not_leave_the_plateau() -> None:
    # One +30% sample on a flat 100 plateau, window 10, limit 1%: the slope fails
    # only while the outlier sits near either end of the window (3 evaluations
    # each time), fewer than leave_after = 5 consecutive failures.
    ss = SteadyState.parse("iops_slope:1%", window_s=10)
    series = [100.0] * 12 + [130.0] + [100.0] * 12
    assert feed(ss, series) == [(10.0, "reached")]
    assert ss.state == "steady"
    assert ss.leave_after == 5


def test_an_outlier_that_breaks_a_deviation_window_leaves_and_returns() -> None:
    # With iops:10% a 50% dip keeps every window that holds it unsteady (fio's
    # own definition), so probetop reports leaving, then a new plateau once the
    # dip has left the window.
    ss = SteadyState.parse("iops:10%", window_s=10)
    series = [100.0] * 12 + [50.0] + [100.0] * 12
    assert feed(ss, series) == [(10.0, "reached"), (17.0, "left"), (23.0, "reached")]
    assert ss.left_at_s == 13.0


def test_deviation_limit_is_strict_like_fio() -> None:
    # Window 90,110: mean 100, max deviation 10 -> 10% ; fio needs criterion < limit.
    at_limit = SteadyState.parse("iops:10%", window_s=2)
    assert feed(at_limit, [90.0, 110.0]) == []
    assert at_limit.value == pytest.approx(10.0)
    above = SteadyState.parse("iops:10.001%", window_s=2)
    assert feed(above, [90.0, 110.0]) == [(2.0, "reached")]
    absolute = SteadyState.parse("iops:10", window_s=2)
    assert feed(absolute, [90.0, 110.0]) == []
    assert feed(SteadyState.parse("iops:10.5", 2), [90.0, 110.0]) == [(2.0, "reached")]


def test_bw_criteria_use_bandwidth_not_iops() -> None:
    ss = SteadyState.parse("bw:1%", window_s=3)
    # IOPS constant, bandwidth varies (block size changes): bw must decide.
    for t, bw in enumerate([1e6, 2e6, 3e6, 3e6, 3e6, 3e6], start=1):
        event = ss.add(float(t), 100.0, bw, t * 100)
        if event:
            assert (t, event) == (5, "reached")
    assert ss.reached_at_s == 5.0 and ss.reached_at_bytes == 500
    slope = SteadyState.parse("bw_slope:1k", window_s=4)
    for t, bw in enumerate([0.0, 4096.0, 8192.0, 12288.0], start=1):  # slope 4 KiB/s
        slope.add(float(t), 100.0, bw, 0)
    assert slope.value == pytest.approx(4096.0) and slope.state == "searching"


@pytest.mark.parametrize("n", [2, 3, 7, 30])
def test_slope_matches_least_squares(n: int) -> None:
    ys = [((i * 37) % 11) * 13.0 + i * 2.5 + 500 for i in range(n)]
    ss = SteadyState.parse("iops_slope:1000%", window_s=n)
    reference = statistics.linear_regression(list(range(n)), ys).slope
    # fio's percentage divides by the integer mean floor(sum / n) (see steady.py).
    assert ss.evaluate(ys) == pytest.approx(100 * reference / (sum(ys) // n))
    absolute = SteadyState.parse("iops_slope:1e9", window_s=n)
    assert absolute.evaluate(ys) == pytest.approx(reference)


def test_negative_slope_counts_by_magnitude() -> None:
    ss = SteadyState.parse("iops_slope:1%", window_s=3)
    assert feed(ss, [100.0, 99.0, 98.0]) == []  # |-1/99| = 1.01% >= 1%
    ss = SteadyState.parse("iops_slope:1.1%", window_s=3)
    assert feed(ss, [100.0, 99.0, 98.0]) == [(3.0, "reached")]


def test_samples_are_integers_like_fios() -> None:
    # fio stores each interval's rate as uint64: 10.7, 10.2, 10.9 IOPS are 10, 10, 10.
    ss = SteadyState.parse("iops_slope:0.01%", window_s=3)
    assert feed(ss, [10.7, 10.2, 10.9]) == [(3.0, "reached")]
    # Below 1 IOPS the integer mean is 0: fio divides by zero and never attains.
    slow = SteadyState.parse("iops_slope:50%", window_s=3)
    assert feed(slow, [0.9, 0.9, 0.9, 1.5]) == []


def test_zero_mean_is_never_a_plateau() -> None:
    ss = SteadyState.parse("iops_slope:1%", window_s=3)
    assert feed(ss, [0.0] * 10) == []
    assert ss.value is None and ss.state == "searching"


def test_ramp_samples_are_ignored() -> None:
    series = [50.0] * 3 + [100.0] * 10  # a flat 50 during the ramp, then 100
    assert feed(SteadyState.parse("iops:1%", window_s=3), series)[0] == (3.0, "reached")
    ramp = SteadyState.parse("iops:1%", window_s=3, ramp_s=3)
    assert feed(ramp, series)[0] == (6.0, "reached")
    assert ramp.episodes[0].mean == 100.0
    # The sample ending at 3.0 s covers 2..3 s: inside a 2.5 s ramp for only half
    # of it, so it counts (fio starts collecting one interval after the ramp).
    half = SteadyState.parse("iops:1%", window_s=3, ramp_s=2.5)
    assert feed(half, series)[0] == (6.0, "reached")
    short = SteadyState.parse("iops:1%", window_s=2, ramp_s=2.5)
    assert feed(short, series)[0] == (5.0, "reached")  # window 4..5 s; 3 s held a 50


def test_as_dict_keys() -> None:
    ss = SteadyState.parse("iops_slope:0.01%", window_s=3)
    feed(ss, [5.0] * 3)
    d = ss.as_dict()
    assert {"criterion", "reached_at_s", "reached_at_bytes", "left_at_s"} <= d.keys()
    assert d["criterion"] == "iops_slope:0.01%"
    json.dumps(d)


# ------------------------------------------------------------------ against fio


# Limits chosen so that the first three attain within 3 s on any machine and the
# last never does: the point is the same value and decision on the same samples.
FIO_JOBS = {
    "slope_pct": "iops_slope:80%",
    "dev_pct": "iops:90%",
    "bw_slope_abs": "bw_slope:1t",
    "never": "iops:0.0001%",
}


@pytest.fixture(scope="module")
def fio_jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """One fio run with four concurrent jobs, each with its own steady-state rule."""
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed (make system-deps installs it)")
    work = tmp_path_factory.mktemp("fio-ss")
    lines = [
        "[global]",
        f"directory={work}",
        "size=8m",
        "rw=randread",
        "bs=4k",
        "ioengine=psync",
        "time_based",
        "runtime=4",
        "ss_dur=3",
    ]
    for name, spec in FIO_JOBS.items():
        lines += [f"[{name}]", "new_group", f"steadystate={spec}"]  # fio: one rule per group
    jobfile = work / "ss.fio"
    jobfile.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        [fio, "--output-format=json", str(jobfile)], capture_output=True, text=True, timeout=60
    )
    if out.returncode != 0:
        pytest.skip(f"fio failed here: {out.stderr.strip()[-300:]}")
    report = json.loads(out.stdout[out.stdout.index("{") :])
    return {j["jobname"]: j["steadystate"] for j in report["jobs"]}


def _fio_criterion(text: str) -> float:
    return float(text.rstrip("%"))


@pytest.mark.parametrize(
    ("job", "metric"), [("slope_pct", "iops"), ("dev_pct", "iops"), ("bw_slope_abs", "bw")]
)
def test_same_decision_and_value_as_fio_when_attained(
    fio_jobs: dict[str, dict], job: str, metric: str
) -> None:
    fio_ss = fio_jobs[job]
    assert fio_ss["attained"] == 1, fio_ss
    samples = fio_ss["data"][metric]  # the window that attained, oldest first
    ss = SteadyState.parse(FIO_JOBS[job], window_s=fio_ss["duration"])
    assert fio_ss["ss"].split(":")[0] == ss.criterion
    transitions = []
    for t, v in enumerate(samples, start=1):
        event = ss.add(float(t), v, v, 0) if metric == "iops" else ss.add(float(t), 0, v, 0)
        if event:
            transitions.append((t, event))
    assert transitions == [(len(samples), "reached")]
    assert ss.value == pytest.approx(_fio_criterion(fio_ss["criterion"]), rel=1e-5, abs=1e-5)
    if ss.slope:
        window = [float(v) for v in samples]
        integer_mean = sum(window) // len(window)  # fio's integer division
        raw = ss.value * integer_mean / 100 if ss.percent else ss.value
        assert raw == pytest.approx(fio_ss["slope"], rel=1e-6, abs=1e-3)
    else:
        assert max(abs(v - statistics.fmean(samples)) for v in samples) == pytest.approx(
            fio_ss["max_deviation"], rel=1e-6
        )


def test_same_refusal_as_fio_when_not_attained(fio_jobs: dict[str, dict]) -> None:
    fio_ss = fio_jobs["never"]
    assert fio_ss["attained"] == 0
    ss = SteadyState.parse(FIO_JOBS["never"], window_s=fio_ss["duration"])
    # fio dumps a full, not-attained ring from an arbitrary slot; the deviation
    # criterion does not depend on order, so the value must still agree.
    samples = fio_ss["data"]["iops"]
    assert all(ss.add(float(t), v, 0, 0) is None for t, v in enumerate(samples, start=1))
    assert ss.value == pytest.approx(_fio_criterion(fio_ss["criterion"]), rel=1e-5)
    assert ss.state == "searching"
