"""docs/icmp.md names every option `probetop icmp` shows in --help."""

from __future__ import annotations

import re
from pathlib import Path

from probetop.probes.icmp import SPEC

DOC = Path(__file__).resolve().parents[2] / "docs" / "icmp.md"


def documented_names() -> list[str]:
    """Each visible option's long flags (its short ones when it has no long
    one, its metavar for a positional)."""
    names = []
    for option in SPEC.options:
        if option.hidden:
            continue
        if option.positional:
            names.append(option.metavar or option.flags[0])
            continue
        long = [flag for flag in option.flags if flag.startswith("--")]
        names.extend(long or option.flags)
    return names


def test_every_visible_option_is_documented() -> None:
    text = DOC.read_text()
    names = documented_names()
    assert "--send-interval" in names and "--sample-interval" in names and "-4" in names
    missing = [name for name in names if not re.search(f"`{re.escape(name)}[` ]", text)]
    assert missing == [], f"docs/icmp.md does not name {missing}"
