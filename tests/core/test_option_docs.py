"""Every option a command declares is documented on its docs page.

The option specs (``CommandSpec``) are the one declaration the CLI renders;
this test reads the same specs, so a new option without a docs line fails.
A probe family's page is its descriptor's (``Family.docs``, probes/registry.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from probetop.probes import registry
from probetop.tui import commands
from probetop.tui.cli.plan import COMMON_OPTIONS

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGE = {
    **{f.name: str(Path(f.docs).relative_to("docs")) for f in registry.families()},
    "demo": "usage.md",
    "replay": "usage.md",
    "report": "usage.md",
    "export": "metrics.md",
    "compare": "compare.md",
}


def documented(flag: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


@pytest.mark.parametrize("name", sorted(PAGE))
def test_every_visible_option_is_on_the_commands_page(name: str) -> None:
    module = commands.load(name)
    assert module is not None
    spec = getattr(module, "SPEC", None)
    if spec is None:
        pytest.skip(f"{name} has no option spec yet")
    text = (DOCS / PAGE[name]).read_text()
    missing = [
        max(opt.flags, key=len)
        for opt in spec.options
        if not opt.hidden and not opt.positional and not documented(max(opt.flags, key=len), text)
    ]
    assert missing == [], f"docs/{PAGE[name]} does not mention {missing}"


def test_common_options_are_in_usage() -> None:
    text = (DOCS / "usage.md").read_text()
    missing = [opt.flags[0] for opt in COMMON_OPTIONS if not documented(opt.flags[0], text)]
    assert missing == []
