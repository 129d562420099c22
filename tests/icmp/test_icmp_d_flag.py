"""`-d` is two tools' flag: hping3's `-d SIZE` (data size: icmp's -s) and
ping's `-d` alone (SO_DEBUG, nothing measured changes). A number after it is
hping3's; anything else leaves it ping's, ignored. Before, `probetop icmp -d
-c 1 HOST` failed with "-s/--size: expected one argument" and `-d HOST` took
the host for a size.
"""

from __future__ import annotations

import pytest
from probetop.tui.cli.parser import build_parser, read_spellings


@pytest.mark.parametrize(
    ("argv", "read"),
    [
        (["-d", "-c", "1", "127.0.0.1"], ["-c", "1", "127.0.0.1"]),
        (["-d", "127.0.0.1"], ["127.0.0.1"]),
        (["-c", "1", "127.0.0.1", "-d"], ["-c", "1", "127.0.0.1"]),
        (["-d", "120", "-c", "1", "127.0.0.1"], ["-s", "120", "-c", "1", "127.0.0.1"]),
        (["-d", "1k", "127.0.0.1"], ["-s", "1k", "127.0.0.1"]),
        (["--data", "64", "127.0.0.1"], ["-s", "64", "127.0.0.1"]),
    ],
)
def test_d_is_hping3s_size_only_before_a_number(argv: list[str], read: list[str]) -> None:
    assert read_spellings(build_parser(), ["icmp", *argv]) == ["icmp", *read]


def test_help_names_both() -> None:
    text = build_parser()._subparsers._group_actions[0].choices["icmp"].format_help()  # type: ignore[union-attr]
    assert "hping3 -d V is -s V" in text and "ping -d: ignored (SO_DEBUG" in text, text
