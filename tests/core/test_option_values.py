"""One spelling, one meaning: every time option of every command reads the
same durations, every size option the same sizes
(docs/usage.md#durations-and-sizes-one-spelling-everywhere).

Found by a hostile review: ``--time 1m`` and ``--time 500ms`` were refused
("not a number") while ``icmp -i 200ms`` was read, ``--ramp``/``--ss-dur``/
``-W``/``-m`` took only bare numbers, and ``--size 1Gi`` was refused. The
tests read every option of every spec, so an option added later with a bare
number parser fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from probetop.probes.core.options import Option, OptionValueError, parse_byte_size
from probetop.probes.core.units import Unit, UnitError, parse_quantity
from probetop.tui import commands
from probetop.tui.cli.plan import COMMON_OPTIONS

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]

SECONDS = {"S", "DURATION"}  # metavars of options in seconds
MILLISECONDS = {"MS"}
SIZES = {"SIZE", "OFF", "BYTES"}
SYSBENCH_COMMANDS = ("cpu", "mem")  # their --time and --report-interval are sysbench's INTs too


def every_option() -> Iterator[tuple[str, Option]]:
    yield from (("common", o) for o in COMMON_OPTIONS)
    for name, module in commands.available(None):
        spec = getattr(module, "SPEC", None)
        if spec is not None:
            yield from ((name, o) for o in spec.options)


def options_with(metavars: set[str]) -> list[tuple[str, Option]]:
    return [(c, o) for c, o in every_option() if o.metavar in metavars and o.parse is not None]


def ids(items: list[tuple[str, Option]]) -> list[str]:
    return [f"{c}:{max(o.flags, key=len)}" for c, o in items]


TIME_OPTIONS = options_with(SECONDS)
MS_OPTIONS = options_with(MILLISECONDS)
SIZE_OPTIONS = options_with(SIZES)


def test_the_lists_are_not_empty() -> None:
    """Guard: the tests below must see the options they are about."""
    assert len(TIME_OPTIONS) >= 15 and len(MS_OPTIONS) == 4 and len(SIZE_OPTIONS) >= 7


@pytest.mark.parametrize(("command", "option"), TIME_OPTIONS, ids=ids(TIME_OPTIONS))
@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("1.5m", 90.0), ("90s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("20us", 2e-5)],
)
def test_every_time_option_reads_the_same_durations(
    command: str, option: Option, text: str, seconds: float
) -> None:
    assert option.parse is not None
    if option.flags == ("--wait",) and seconds < 0.1:
        pytest.skip("stop --wait starts at 0.1 s")
    assert option.parse(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(("command", "option"), TIME_OPTIONS, ids=ids(TIME_OPTIONS))
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-1", "must be"),
        ("nan", "not a duration"),
        ("inf", "not a duration"),
        ("10 parsecs", "not a duration"),
        ("1e999", "finite"),
    ],
)
def test_every_time_option_refuses_the_same_junk(
    command: str, option: Option, text: str, message: str
) -> None:
    assert option.parse is not None
    if command in SYSBENCH_COMMANDS and message != "must be":
        # sysbench's INT check speaks first there, in its words (its exit 1)
        message = rf"Invalid value for the '\w+' option: '{text}'"
    with pytest.raises(OptionValueError, match=message):
        option.parse(text)


@pytest.mark.parametrize(("command", "option"), MS_OPTIONS, ids=ids(MS_OPTIONS))
def test_millisecond_options_read_a_unit_the_same_way(command: str, option: Option) -> None:
    assert option.parse is not None
    assert option.parse("250") == 250.0
    assert option.parse("2s") == 2000.0
    assert option.parse("1m") == 60_000.0


@pytest.mark.parametrize(("command", "option"), SIZE_OPTIONS, ids=ids(SIZE_OPTIONS))
@pytest.mark.parametrize("text", ["4k", "4K", "4KB", "4kb", "4KiB", "4Ki", "4096"])
def test_every_size_option_reads_the_same_sizes(command: str, option: Option, text: str) -> None:
    assert option.parse is not None
    assert option.parse(text) == 4096


def test_size_spellings() -> None:
    assert parse_byte_size("1Gi") == parse_byte_size("1GiB") == parse_byte_size("1g") == 1 << 30
    assert parse_byte_size("1.5G") == 3 << 29  # a whole number of bytes
    assert parse_byte_size("1.5k") == 1536  # fio truncates it to 1 byte
    for junk in ("0.3k", "1i", "-4k", "4x", "1e3", "", "\uff14k"):
        with pytest.raises(OptionValueError):
            parse_byte_size(junk)


def test_assert_thresholds_take_the_options_time_units_and_say_which_bytes() -> None:
    assert parse_quantity("2m", Unit.of("s")) == 120.0
    assert parse_quantity("1h", Unit.of("s")) == 3600.0
    assert parse_quantity("1Gi", Unit.of("B")) == float(1 << 30)
    assert parse_quantity("40k", Unit.of("IO/s")) == 40_000.0  # a count's k stays 10^3
    with pytest.raises(UnitError, match=r"ambiguous.*1MB/s.*1MiB/s"):
        parse_quantity("1M", Unit.of("B/s"))  # --size 1M is 2^20: say which


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [*PROBETOP, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def test_a_run_measures_for_the_duration_spelled_with_a_unit() -> None:
    out = run("cpu", "--time", "600ms", "--sample-interval", "200ms", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert 0.5 <= doc["total_time"] <= 1.5, doc["total_time"]


def test_a_file_is_made_at_a_size_spelled_the_kubernetes_way(tmp_path) -> None:
    target = tmp_path / "k8s.img"
    # --time bounds the layout too (iops.py _lay_out): 300 ms ran out while a
    # loaded CI machine was still writing the 1 MiB, so give it seconds.
    out = run(
        "iops", str(target), "--size", "1Mi", "--bs", "4Ki", "--rw", "write",
        "--time", "2s", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert target.stat().st_size == 1 << 20
    assert json.loads(out.stdout)["global options"]["bs"] == "4k"


# -- reference tools' spellings ---------------------------------------------


def parsed(*argv: str) -> dict[str, object]:
    from probetop.tui.cli.parser import build_parser, parse_args

    return vars(parse_args(build_parser(), list(argv)))


def test_a_pasted_fio_line_reads_as_the_same_options() -> None:
    got = parsed(
        "iops", "--filename=/tmp/x", "--numjobs=4", "--runtime=30", "--ramp_time=2",
        "--direct=0", "--rate_iops=100", "--cpus_allowed=0", "--group_reporting",
        "--time_based", "--blocksize=8k", "--readwrite=randwrite",
    )  # fmt: skip
    assert got["target"] == "/tmp/x"
    assert (got["jobs"], got["time"], got["ramp"], got["direct"]) == (4, 30.0, 2.0, False)
    assert (got["rate_iops"], got["cpus_allowed"], got["bs"], got["rw"]) == (
        100,
        (0,),
        8192,
        "randwrite",
    )
    assert parsed("iops", "/tmp/x", "--direct=1", "--sync=1")["direct"] is True


def test_old_sysbench_and_ping_lines_read_as_the_same_options() -> None:
    got = parsed("cpu", "--test=cpu", "--num-threads=2", "--max-time=5", "--max-requests=9", "run")
    assert (got["threads"], got["time"], got["events"]) == (2, 5.0, 9)
    got = parsed("mem", "--test=memory", "--num-threads", "3")
    assert got["threads"] == 3
    got = parsed("icmp", "-n", "-1", "-d", "120", "-c", "3", "127.0.0.1")
    assert (got["size"], got["count"], got["host"]) == (120, 3, "127.0.0.1")
    assert parsed("icmp", "-c", "2", "-s", "1k", "::1")["size"] == 1024


@pytest.mark.parametrize(
    ("argv", "message", "status"),
    [
        (("iops", "/tmp/x", "--direct=2"), "fio's --direct takes 1 or 0 here, got '2'", 2),
        # cpu: sysbench's status for a refused option, 1
        (("cpu", "--test=memory"), "sysbench's --test takes cpu here", 1),
        (("iops", "/tmp/x", "--no_such_option=1"), "unrecognized arguments: --no_such_option=1", 2),
    ],
)
def test_a_spelling_with_another_meaning_is_a_usage_error(
    argv: tuple[str, ...], message: str, status: int
):
    out = run(*argv)
    assert out.returncode == status and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_every_spelling_names_an_option_its_command_has_and_help_lists_it() -> None:
    from probetop.tui.cli.parser import build_parser, spellings_epilog

    subs = {
        a.dest: a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"
    }
    parsers = next(iter(subs.values())).choices
    seen = 0
    for name, module in commands.available(None):
        spec = getattr(module, "SPEC", None)
        for spelling in getattr(spec, "spellings", ()):
            seen += 1
            known = parsers[name]._option_string_actions
            targets = (spelling.by_value or {}).values() if spelling.by_value else [spelling.ours]
            for flag in targets:
                # a flag, or FLAG=VALUE (fio's --rw=randwrite is --pattern=randwrite)
                option = (flag or "").split("=", 1)[0]
                assert not flag or option in known, f"{name}: {spelling.theirs} -> {flag}"
            if spelling.by_value is None:  # fio's --direct=1 is read before --direct
                assert spelling.theirs not in known, f"{name}: {spelling.theirs} is ours already"
            assert spelling.describe() in spellings_epilog(spec)
    assert seen >= 15


def test_a_pasted_fio_line_runs(tmp_path) -> None:
    """On tmpfs: ``--time`` bounds the layout too (docs/iops.md), and laying
    out 1 MiB on this machine's shared disk (fsync) once took longer than
    the line's 300 ms (exit 2, "ran out while laying out", at a load average
    of 16-36). On tmpfs it takes milliseconds; 1 s leaves a margin."""
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    base = (
        Path(tempfile.mkdtemp(prefix="probetop-test-", dir=shm))
        if os.access(shm, os.W_OK)
        else tmp_path
    )
    target = base / "fio line.img"  # a space in the path, as users have
    try:
        out = run(
            "iops", f"--filename={target}", "--size=1Mi", "--bs=4k", "--rw=randwrite",
            "--numjobs=1", "--runtime=1s", "--time_based", "--direct=0",
            "--group_reporting", "--output-format=json",
        )  # fmt: skip
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr
        doc = json.loads(out.stdout)
        assert doc["jobs"][0]["write"]["total_ios"] > 0
        assert target.stat().st_size == 1 << 20
    finally:
        if base != tmp_path:
            shutil.rmtree(base, ignore_errors=True)


def test_an_old_sysbench_line_runs() -> None:
    out = run(
        "cpu", "--test=cpu", "--num-threads=1", "--max-time=1", "--cpu-max-prime=2000",
        "run", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["threads"] == 1 and 0.8 <= doc["total_time"] <= 2.0


def _numeric(option: Option) -> bool:
    """Whether the option's parser reads "10" as the number 10."""
    assert option.parse is not None
    try:
        value = option.parse("10")
    except (OptionValueError, ValueError, TypeError):
        return False
    return not isinstance(value, (str, bool)) and isinstance(value, (int, float)) and value == 10


NUMERIC_OPTIONS = [(c, o) for c, o in every_option() if o.parse is not None and _numeric(o)]


@pytest.mark.parametrize(("command", "option"), NUMERIC_OPTIONS, ids=ids(NUMERIC_OPTIONS))
@pytest.mark.parametrize("text", ["1_0", "\u0661\u0660", "１０"])
def test_no_number_option_reads_what_c_does_not(command: str, option: Option, text: str) -> None:
    """Python's int() and float() read ``1_0`` as 10, and Arabic-Indic or
    full-width digits too; strtol, atoi and strtod (ping, curl, fio,
    sysbench) read none of them (``icmp -c 1_0`` sent 10 requests, ping
    refuses it, exit 1)."""
    assert option.parse is not None
    with pytest.raises(OptionValueError):
        option.parse(text)
