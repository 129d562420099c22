"""The disk family's front door: option specs (and their docs), settings, typed
records, and the one confirmation flow for runs that destroy data."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from probetop.probes import disk
from probetop.probes.core.base import ConfirmationRequired, ProbeError, UsageProbeError
from probetop.probes.core.sample import Sample
from probetop.probes.disk import (
    IOPS,
    WARMUP,
    DirectionRates,
    IopsInterval,
    IopsParams,
    IopsSettings,
    WarmupInterval,
    WarmupParams,
    WarmupSettings,
)
from probetop.probes.record import load_session
from probetop.tui import main as tui_main
from probetop.tui.cli.parser import build_parser, make_plan
from probetop.tui.cli.plan import CommonOptions
from probetop.tui.commands import load
from probetop.tui.ui.panes.disk import IopsPane, WarmupPane

DOCS = Path(__file__).resolve().parents[2] / "docs"


# -- specs (docs: tests/core/test_option_docs.py) -----------------------------


def test_shared_options_are_declared_once() -> None:
    iops = {max(o.flags, key=len): o for o in IOPS.spec.options}
    warmup = {max(o.flags, key=len): o for o in WARMUP.spec.options}
    assert iops["--jobs"] is warmup["--jobs"] and iops["--rate-iops"] is warmup["--rate-iops"]
    for flag in ("--bs", "--iodepth", "--buffered", "--yes-destroy-data", "target"):
        a, b = iops[flag], warmup[flag]
        assert (a.parse, a.metavar, a.action, a.dest) == (b.parse, b.metavar, b.action, b.dest)
    assert (iops["--iodepth"].default, warmup["--iodepth"].default) == (1, 32)
    assert iops["--direct"].exclusive == iops["--buffered"].exclusive is not None


def test_the_commands_are_plan_based() -> None:
    for family in (IOPS, WARMUP):
        assert load(family.name).SPEC is family.spec
        assert family.one_off is None and family.headless_only is None  # the generic path


def test_importing_the_front_door_does_not_load_the_engine() -> None:
    code = "import sys, probetop.probes.disk; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- settings ----------------------------------------------------------------


def _plan(*argv: str) -> Any:
    return make_plan(build_parser().parse_args(list(argv)), ["probetop", *argv])


def test_iops_settings_from_the_command_line(tmp_path: Path) -> None:
    target = str(tmp_path / "t.img")
    assert _plan("iops", target).settings == IopsSettings(target)
    plan = _plan(
        "iops", target, "--rw", "randrw", "--bs", "1M", "--buffered", "--time", "0",
        "--interval", "0.5", "--rate-iops", "10", "--yes-destroy-data", target,
    )  # fmt: skip
    s = plan.settings
    assert (s.rw, s.bs, s.direct, s.time_s, s.interval_s, s.rate_iops) == (
        "randrw", 1 << 20, False, None, 0.5, 10
    )  # fmt: skip
    assert s.confirmed and s.yes_destroy_data == target
    assert load("iops").deadline_s(plan) is None


def test_warmup_settings_from_the_command_line(tmp_path: Path) -> None:
    target = str(tmp_path / "v.img")
    assert _plan("warmup", target).settings == WarmupSettings(target)
    cases = {
        ("--write",): ("write", 1 << 20),
        ("--write", "--read"): ("write+read", 1 << 20),
        ("--pattern", "randwrite"): ("randwrite", 4096),
        ("--read", "--bs", "64k"): ("read", 65536),
    }
    for args, (name, bs) in cases.items():
        s = _plan("warmup", target, *args).settings
        assert (s.pass_name, s.bs, s.confirmed) == (name, bs, False), args
    s = _plan("warmup", target, "--range", "1M-", "--buffered", "--time", "5").settings
    assert (s.range_start, s.range_end, s.direct, s.time_s) == (1 << 20, None, False, 5.0)


def test_settings_refusals_name_the_option(tmp_path: Path) -> None:
    target = str(tmp_path / "v.img")
    with pytest.raises(UsageProbeError, match="does not name the target"):
        IopsSettings(target, rw="write", yes_destroy_data="/dev/sdz").validate()
    with pytest.raises(UsageProbeError, match="only for a write pass"):
        WarmupSettings(target, yes_destroy_data=target).validate()
    with pytest.raises(UsageProbeError, match=r"--jobs must be 1\.\.256"):
        IopsSettings(target, jobs=0).validate()
    with pytest.raises(UsageProbeError, match="--rwmixread"):
        IopsSettings(target, rwmixread=101).validate()
    with pytest.raises(UsageProbeError, match="steady-state"):
        WarmupSettings(target, steadystate="nope").validate()
    with pytest.raises(UsageProbeError, match="--ramp"):
        disk.IopsProbe(IopsSettings(target, ramp_s=-1))


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("-5-10", "not a range: '-5-10'"),  # said "not a size: '5-10'"
        ("1-2-3", "not a range: '1-2-3'"),  # said "not a size: '2-3'"
        ("x-10", "not a size: 'x'"),
    ],
)
def test_a_bad_range_is_quoted_whole(value: str, says: str, tmp_path: Path) -> None:
    target = tmp_path / "v.img"
    target.write_bytes(b"\0" * 65536)
    out = subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", "warmup", str(target), f"--range={value}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and says in out.stderr, out.stderr
    assert f"not a range: {value!r}" in out.stderr


# -- records -----------------------------------------------------------------


def _json_round_trip(sample: Sample) -> Sample:
    """As a recording writes and reads it back."""
    line = json.dumps({"values": dict(sample.values), "extra": dict(sample.extra)})
    doc = json.loads(line)
    return Sample(sample.probe, sample.t_ns, sample.interval_s, doc["values"], doc["extra"])


def test_iops_interval_keeps_the_recording_layout() -> None:
    read = DirectionRates(1000.0, 4096000.0, 50.0, 99.0, 60.0, {"50.000000": 50.0})
    sample = IopsInterval(read, None, 0.0, ramp=True).to_sample("iops:x", 5, 1.0)
    assert list(sample.values) == [
        "read_iops", "read_Bps", "read_clat_p50_us", "read_clat_p99_us", "read_clat_mean_us",
        "errors",
    ]  # fmt: skip
    assert list(sample.extra) == ["clat_us", "ramp", "percentiles"]
    assert sample.extra["clat_us"] == {"read": {"50.000000": 50.0}}
    back = IopsInterval.from_sample(_json_round_trip(sample))
    assert back.write is None and back.ramp is True
    assert back.read == read and back.read.percentile_us(50) == 50.0
    # An old or partial sample reads as "unknown", never raises.
    empty = IopsInterval.from_sample(Sample("iops:x", 0, 1.0, {"write_iops": 3.0}, {}))
    assert empty.read is None and empty.write is not None and empty.write.iops == 3.0
    assert empty.write.clat_p99_us is None and empty.errors_per_s is None


def test_warmup_interval_keeps_the_recording_layout() -> None:
    interval = WarmupInterval(
        bw_bps=1e6, iops=10.0, progress_pct=50.0, done_bytes=5.0, total_bytes=10.0, eta_s=3.0,
        elapsed_s=1.0, errors=0.0, pass_name="write", done_map=(1.0, 0.0),
        plateau={"criterion": "iops:5%", "window_s": 30.0, "state": "searching"},
        plateau_state="searching", bad_sectors=0,
    )  # fmt: skip
    sample = interval.to_sample("warmup:x", 5, 1.0)
    assert list(sample.values) == [
        "bw_Bps", "iops", "progress_pct", "done_bytes", "total_bytes", "eta_s", "elapsed_s",
        "errors",
    ]  # fmt: skip
    assert list(sample.extra) == ["pass", "map", "plateau", "plateau_state", "bad_sectors"]
    back = WarmupInterval.from_sample(_json_round_trip(sample))
    assert back == interval and back.writes
    assert back.plateau_view is not None and back.plateau_view.criterion == "iops:5%"
    bare = WarmupInterval.from_sample(Sample("warmup:x", 0, 1.0, {}, {}))
    assert bare.done_map is None and bare.plateau_view is None and bare.pass_name == ""


def test_params_read_back_typed(tmp_path: Path) -> None:
    target = tmp_path / "f.img"
    target.write_bytes(b"\0" * (1 << 20))
    iops = disk.IopsProbe(IopsSettings(str(target), rw="write", bs=65536))
    iops.prepare()
    params = IopsParams.from_info({"id": iops.id, "params": dict(iops.params())})
    assert params == iops.run_params() and params.directions == ("write",)
    warmup = disk.WarmupProbe(WarmupSettings(str(target), checkpoint=str(tmp_path / "c.json")))
    warmup.prepare()
    wparams = WarmupParams.from_info({"id": warmup.id, "params": dict(warmup.params())})
    assert wparams == warmup.run_params() and wparams.range == (0, 1 << 20)
    assert IopsParams.from_info({"id": "iops:y"}).target == "iops:y"  # no params: still a title


# -- the confirmation flow ---------------------------------------------------


def test_an_unconfirmed_write_raises_the_typed_request(tmp_path: Path) -> None:
    target = tmp_path / "f.img"
    target.write_bytes(b"\0" * (1 << 20))
    probe = disk.WarmupProbe(WarmupSettings(str(target), pass_name="write+read"))
    with pytest.raises(ConfirmationRequired) as caught:
        probe.prepare()
    request = caught.value
    assert request.target == str(target) and request.action == "write pass"
    assert request.signatures == () and request.exit_code == 2
    assert "destroys every byte" in str(request)
    plan = _plan("warmup", str(target), "--write", "--checkpoint", str(tmp_path / "c.json"))
    confirmed = load("warmup").confirmed(plan)
    assert confirmed.settings == dataclasses.replace(plan.settings, confirmed=True)
    assert plan.settings.confirmed is False  # plans are not changed, replaced
    load("warmup").build_probes(confirmed)[0].prepare()


def test_files_never_need_a_confirmation_for_iops(tmp_path: Path) -> None:
    target = tmp_path / "f.img"
    disk.IopsProbe(IopsSettings(str(target), rw="randwrite", size=1 << 20)).prepare()


@pytest.mark.parametrize("answer", [True, False])
def test_the_dashboard_asks_once_then_builds_confirmed_probes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    answer: bool,
) -> None:
    target = tmp_path / "f.img"
    target.write_bytes(b"\0" * (1 << 20))
    asked: list[ConfirmationRequired] = []
    shown: list[Any] = []
    monkeypatch.setattr(CommonOptions, "wants_headless", property(lambda self: False))
    monkeypatch.setattr(tui_main, "ask_confirmation", lambda r: asked.append(r) or answer)
    monkeypatch.setattr(tui_main, "run_app", lambda config, **_: shown.append(config) or 0)
    argv = ["warmup", str(target), "--write", "--checkpoint", str(tmp_path / "c.json")]
    code = tui_main.main(argv)
    assert [(r.target, r.action) for r in asked] == [(str(target), "write pass")]
    if answer:
        assert code == 0 and len(shown) == 1
        probe = next(p for p in shown[0].probes if p.kind == "warmup")
        assert probe.settings.confirmed is True
    else:
        assert code == 1 and shown == []
        assert "write pass not confirmed: nothing was written" in capsys.readouterr().err


def test_refusals_come_before_the_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.img"
    target.write_bytes(b"\0" * 4096)
    monkeypatch.setattr(CommonOptions, "wants_headless", property(lambda self: False))
    monkeypatch.setattr(tui_main, "ask_confirmation", lambda r: pytest.fail("asked"))
    # Smaller than one block: refused outright, nobody is asked to confirm.
    assert tui_main.main(["warmup", str(target), "--write", "--bs", "1M"]) == 2
    with pytest.raises(ProbeError, match="smaller than the block size"):
        disk.WarmupProbe(WarmupSettings(str(target), pass_name="write", bs=1 << 20)).prepare()


# -- old recordings ----------------------------------------------------------

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(
    ("name", "record", "params"),
    [
        ("iops-session-0.1.jsonl", IopsInterval, IopsParams),
        ("warmup-session-0.1.jsonl", WarmupInterval, WarmupParams),
    ],
)
def test_recordings_of_probetop_0_1_read_back_key_for_key(
    name: str, record: Any, params: Any
) -> None:
    session = load_session(DATA / name)
    (info,) = [p for p in session.header_probes().values() if p["kind"] in ("iops", "warmup")]
    typed = params.from_info(info)
    again = typed.as_dict()
    # Keys added since 0.1 take the value the old run had (warm-up: "engine",
    # psync at iodepth 1, else libaio; iops: one file per job, fio's default
    # file service); every old key reads back unchanged.
    added = {k: again.pop(k) for k in list(again) if k not in info["params"]}
    assert list(again.items()) == list(info["params"].items())
    depth = info["params"]["iodepth"]
    assert added == (
        {"engine": "psync" if depth == 1 else "libaio"}
        if params is WarmupParams
        else {"nrfiles": 1, "file_service_type": "roundrobin"}
    )
    samples = [r for _t, r in session.records() if isinstance(r, Sample) and r.probe == info["id"]]
    assert samples
    for sample in samples:
        again = record.from_sample(sample).to_sample(sample.probe, sample.t_ns, sample.interval_s)
        assert list(again.values.items()) == list(sample.values.items())
        assert list(again.extra.items()) == list(sample.extra.items())


def test_the_panes_draw_an_old_recording() -> None:
    lines: dict[str, list[str]] = {}
    panes = {"iops-session-0.1.jsonl": IopsPane, "warmup-session-0.1.jsonl": WarmupPane}
    for name, cls in panes.items():
        session = load_session(DATA / name)
        (info,) = [p for p in session.header_probes().values() if p["kind"] in ("iops", "warmup")]
        pane = cls(info)
        for _t, rec in session.records():
            if isinstance(rec, Sample) and rec.probe == info["id"]:
                pane.add_sample(rec)
        if isinstance(pane, IopsPane):
            assert pane.directions == ["read", "write"]
            lines[name] = pane.compare_lines() + pane.latency_lines()
        else:
            lines[name] = pane.progress_lines() + pane.plateau_lines()
    iops_text = "\n".join(lines["iops-session-0.1.jsonl"])
    assert "read IOPS" in iops_text and "write p99" in iops_text and "█" in iops_text
    warmup_text = "\n".join(lines["warmup-session-0.1.jsonl"])
    assert "read pass" in warmup_text and "ETA" in warmup_text
    assert "plateau iops_slope:0.01% over 1 s" in warmup_text
