"""Generated input for the parsers added since issue 11 (hypothesis).

--metrics [ADDR:]PORT, --assert EXPR (parsed, then resolved against every
command), stop --wait, session metadata files, and the whole command line of
the commands that run no probes. Property: a value, or the parser's own
one-line error; never another exception. ``PROBETOP_HYPOTHESIS_EXAMPLES``
scales every property (400 by default).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from probetop.probes.core.base import ProbeError
from probetop.probes.core.options import OptionValueError
from probetop.tui.analysis.assertions import parse_assertion, resolve
from probetop.tui.cli.parser import build_parser, make_plan, parse_args
from probetop.tui.metrics.address import parse_metrics_address
from probetop.tui.sessions.registry import SessionInfo

EXAMPLES = int(os.environ.get("PROBETOP_HYPOTHESIS_EXAMPLES", "400"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

_ADDRESSISH = st.from_regex(r"\[?[0-9a-fA-F:.%lo]{0,24}\]?:?[0-9]{0,7}", fullmatch=True)
_HOSTISH = st.from_regex(r"[a-z0-9.\-]{0,70}:[0-9]{1,5}", fullmatch=True)


@SETTINGS
@given(st.one_of(st.text(max_size=60), _ADDRESSISH, _HOSTISH))
def test_metrics_address_is_an_address_or_one_line(text: str) -> None:
    try:
        address = parse_metrics_address(text)
    except OptionValueError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400
        return
    assert 0 <= address.port <= 65535
    assert address.host.isascii() and " " not in address.host
    str(address)


_METRICS = st.sampled_from(
    ["cpu.events_per_second", "http.p95", "http.p99", "icmp.loss", "icmp.rtt.p50",
     "iops.read_iops", "warmup.bw", "eps", "x.y", "", "compare:regression"]
)  # fmt: skip
_OPS = st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "=<", "<<", "=", ""])
_VALUES = st.one_of(
    st.text(max_size=16),
    st.from_regex(
        r"-?[0-9.eE+\-]{0,14}(ms|s|us|ns|%|k|M|G|/s|B|KiB|MiB|GB|x|parsecs)?", fullmatch=True
    ),
)
_COMMANDS = st.sampled_from([None, "cpu", "http", "icmp", "iops", "warmup", "compare", "demo"])


@SETTINGS
@given(_METRICS, _OPS, _VALUES, _COMMANDS, st.text(max_size=3))
def test_assertion_is_checked_or_one_line(
    metric: str, op: str, value: str, command: str | None, junk: str
) -> None:
    text = f"{metric}{op}{value}{junk}"
    try:
        parsed = parse_assertion(text)
    except OptionValueError as exc:
        assert "\n" not in str(exc)
        return
    try:
        checks = resolve([parsed], command)
    except (ProbeError, OptionValueError) as exc:
        assert "\n" not in str(exc)
        return
    for check in checks:
        assert check.threshold == check.threshold  # never NaN


_FIELDS = st.sampled_from(
    ["name", "command", "started_at", "pid", "start_ticks", "recording", "socket", "log",
     "ended_at", "exit_code", "extra", "x"]
)  # fmt: skip
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_FIELDS, inner, max_size=12),
    max_leaves=24,
)


@SETTINGS
@given(_JSON)
def test_session_metadata_is_typed_or_refused(data: object) -> None:
    try:
        info = SessionInfo.from_dict(data)
    except ValueError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(info.pid, int) and info.pid >= 2
    assert all(isinstance(a, str) for a in info.command)
    assert info.state in ("running", "finished", "died")
    assert info.recording_size >= 0


_WORDS = st.sampled_from(
    ["--record", "--time", "--interval", "--metrics", "--textfile", "--name", "--wait",
     "--json", "--headless", "--detach", "-O", "csv", "--out", "-", "", "x", "1e309",
     "nan", "0", "-1", "a/b", "../x", "9100", "[::1]:0", "--alpha", "--plot", "f.svg"]
)  # fmt: skip
_NO_PROBES = st.sampled_from(["ls", "stop", "attach", "export", "compare", "report", "replay"])


@settings(max_examples=max(50, EXAMPLES // 2), deadline=None)
@given(_NO_PROBES, st.lists(st.one_of(_WORDS, st.text(max_size=10)), max_size=6))
def test_commands_without_probes_parse_or_say_why(command: str, words: list[str]) -> None:
    """The parser and make_plan of ls/stop/attach/export/compare/report/replay:
    a plan, argparse's exit 2, or a one-line ProbeError. Nothing is run."""
    argv = [command, *words]
    parser = build_parser()
    sink = io.StringIO()
    try:
        with contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
            namespace = parse_args(parser, argv)
        make_plan(namespace, ["probetop", *argv])
    except SystemExit as exc:
        assert exc.code in (0, 2), (argv, sink.getvalue())
    except ProbeError as exc:
        assert exc.exit_code == 2 and "\n" not in str(exc), argv
    except argparse.ArgumentError:
        pytest.fail(f"argparse error escaped for {argv}")


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "~nosuchuser-pt/x.jsonl"],
        ["export", "x.jsonl", "--out", "~nosuchuser-pt/x.prom"],
        ["cpu", "--record", "~nosuchuser-pt/x.jsonl"],
        ["compare", "a.jsonl", "b.jsonl", "--plot", "~nosuchuser-pt/p.svg"],
        ["cpu", "--textfile", "~nosuchuser-pt"],
    ],
)
def test_a_tilde_that_names_no_user_stays_as_written(argv: list[str]) -> None:
    """As a shell leaves ``~nosuchuser/x`` alone: a plan that names that path
    (Path.expanduser raised RuntimeError, a traceback, found by the test above)."""
    plan = make_plan(parse_args(build_parser(), argv), ["probetop", *argv])
    assert "~nosuchuser-pt" in repr(plan)
