"""The lists in tests/conftest.py that decide where a test runs name real
tests: a module renamed or a test renamed would otherwise drop out of the
serial pass (and measure a rate beside another worker), out of the
long-first order, or out of the wait-bound lane, without a word."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

# By path: ``import conftest`` may find tests/disk's or tests/analysis's,
# whichever directory pytest put first on sys.path in this process.
TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("_suite_conftest", TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_every_listed_module_exists() -> None:
    listed = set(conftest.LONG_FIRST) | conftest.WAIT_BOUND | conftest.SERIAL_FILES
    missing = sorted(rel for rel in listed if not (TESTS / rel).is_file())
    assert missing == []


def test_every_named_test_is_defined_in_its_module() -> None:
    missing = []
    for entry in sorted(conftest.SERIAL_TESTS | conftest.WAIT_BOUND_EXCEPT):
        rel, name = entry.split("::", 1)
        path = TESTS / rel
        text = path.read_text() if path.is_file() else ""
        if re.search(rf"^(async )?def {re.escape(name)}\(", text, re.MULTILINE) is None:
            missing.append(entry)
    assert missing == []
