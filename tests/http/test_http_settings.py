"""The http options: one spec (CLI, docs), frozen settings, the mode they choose,
and what they refuse."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from probetop.probes.core.base import UsageProbeError
from probetop.probes.http import SPEC, HttpRequest, HttpSettings, unsupported_message
from probetop.tui.cli.parser import build_parser, make_plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def settings_of(parser, *argv: str) -> HttpSettings:
    """What `probetop ARGV` plans (ARGV includes the command name)."""
    return make_plan(parser.parse_args(list(argv))).settings


def test_docs_name_no_old_module_path():
    text = (ROOT / "docs" / "http.md").read_text()
    assert not re.search(r"http_(transfer|worker|waterfall|probe|stats|pane)\b", text)


def test_every_known_unsupported_curl_option_is_refused_by_name(parser):
    unsupported = [o for o in SPEC.options if o.hidden and o.dest == "curl_unsupported"]
    assert len(unsupported) >= 80
    for option in unsupported:
        (flag,) = option.flags
        argv = ["http", flag, *(["x"] if option.action == "store" else []), "http://127.0.0.1/"]
        with pytest.raises(UsageProbeError) as info:
            settings_of(parser, *argv)
        assert str(info.value) == unsupported_message(flag)
        assert f"curl option {flag} is not supported by probetop http" in str(info.value)
        assert "docs/http.md" in str(info.value)


@pytest.mark.parametrize(
    ("argv", "one_off", "count", "watch"),
    [
        (["http", "URL"], True, None, False),
        (["http", "--interval", "1", "URL"], False, None, False),  # given, even as the default
        (["--interval", "0.5", "http", "URL"], False, None, False),  # before the command
        (["http", "--count", "3", "URL"], False, 3, False),
        (["http", "--time", "2", "URL"], False, None, False),
        # --time 0 is "no time limit" (as in cpu/sysbench): repeated, until stopped.
        (["http", "--time", "0", "URL"], False, None, False),
        (["http", "--watch", "URL"], False, None, True),
        (["http", "--record", "/tmp/x.jsonl", "URL"], False, 1, False),  # one request recorded
        (["http", "--record", "/tmp/x.jsonl", "--interval", "0.5", "URL"], False, None, False),
    ],
)
def test_the_options_choose_the_mode(parser, argv, one_off, count, watch):
    s = settings_of(parser, *argv)
    assert (s.one_off, s.count, s.watch) == (one_off, count, watch)


def test_interval_reaches_the_settings_and_the_common_options(parser):
    plan = make_plan(parser.parse_args(["http", "--interval", "0.2", "URL"]))
    assert plan.settings.interval_s == 0.2 and plan.common.interval_s == 0.2
    plan = make_plan(parser.parse_args(["http", "URL"]))
    assert plan.settings.interval_s == 1.0 and plan.common.interval_s == 1.0


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--fresh", "--reuse"], "--fresh and --reuse"),
        (["--count", "0"], "--count must be at least 1"),
        (["-I", "-d", "a=1"], "contradict"),
        (["-u", "bob"], "USER:PASSWORD"),
        (["--count", "2", "-o", "body.html"], "-o/--output is a one-off option"),
        (["-m", "0"], "--max-time must be positive"),
        (["--max-redirs=-1"], "--max-redirs must be 0 or more"),
        (["-d", "@/nonexistent/file"], "cannot read /nonexistent/file"),
    ],
)
def test_contradictions_are_usage_errors(parser, argv, words):
    with pytest.raises(UsageProbeError, match=re.escape(words)):
        settings_of(parser, "http", *argv, "http://127.0.0.1/")


def test_data_options_join_in_command_line_order(parser, tmp_path):
    body = tmp_path / "body"
    body.write_text("x=1\ny=2\n")
    s = settings_of(
        parser,
        "http",
        "-d",
        "a=1",
        "--data-urlencode",
        "q=a b",
        "--data-raw",
        "@raw",
        "-d",
        f"@{body}",
        "http://127.0.0.1/",
    )
    assert s.request.data == "a=1&q=a%20b&@raw&x=1y=2"
    assert s.request.initial_method() == "POST"


def test_curl_options_land_in_the_request(parser):
    s = settings_of(
        parser,
        "http",
        "-X",
        "PUT",
        "-H",
        "A: 1",
        "-H",
        "B: 2",
        "-L",
        "--max-redirs",
        "3",
        "-6",
        "--http2",
        "--resolve",
        "h:80:127.0.0.1",
        "--reuse",
        "-s",
        "-o",
        "/dev/null",
        "http://h/",
    )
    r = s.request
    assert (r.method, r.headers, r.follow, r.max_redirs) == ("PUT", ("A: 1", "B: 2"), True, 3)
    assert (r.ip_version, r.http_version, r.resolve) == (6, "2", ("h:80:127.0.0.1",))
    assert s.fresh is False and s.connection == "reuse" and s.urls == ("http://h/",)


def test_settings_and_request_are_frozen():
    s = HttpSettings(urls=["http://127.0.0.1/"])  # type: ignore[arg-type]
    assert s.urls == ("http://127.0.0.1/",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.count = 3  # type: ignore[misc]
    r = HttpRequest(headers=["A: 1"])  # type: ignore[arg-type]
    assert r.headers == ("A: 1",) and r.to_dict()["headers"] == ["A: 1"]
    assert HttpRequest.from_dict(r.to_dict()) == r
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.method = "POST"  # type: ignore[misc]


@pytest.mark.parametrize("path", ["tui/commands/probe.py", "tui/ui/panes/http.py"])
def test_the_ui_uses_the_front_door_only(path):
    tree = ast.parse((ROOT / path).read_text())
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    inside = sorted(m for m in imported if m.startswith("probetop.probes.http."))
    assert inside == []
    assert not any(m.startswith("probetop.probes.record.") for m in imported)
