"""Measured figures live in one generated page, docs/figures.md (issue 28).

README.md and every other docs page link it instead of stating a measured
rate or ratio by hand: hand-copied figures went stale and contradicted each
other (replay speed was "212 MB/s", "not reached" and "met" on three pages).
Goals and budgets ("at least 1.0x fio", "<= 10 KB/s"), limits and option
values stay: the heuristic below lets a figure through when a comparison or
goal word stands right before it, or when it is inside code (`--rate 1000`,
command examples). The rest that is not a measurement is listed in ALLOWED,
each with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "docs" / "figures.md"

NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?(?:k|M)?"
DECIMAL = r"\d+\.\d+"
RANGE = rf"{NUMBER}(?:\s*(?:-|–|\.\.|to)\s*{NUMBER})?"
RATE_UNITS = (
    r"(?:MB|GB|MiB|GiB|KB|kB|KiB|B)/s|req(?:uests)?/s|replies/s|IOPS|events/s|eps|ops/s"
    r"|samples/s|records/s|segments/s|pps|MiB/h|MB/h"
)
# A rate: "212 MB/s", "1,148k samples/s"; a ratio: "1.13x", "0.80-0.95x fio",
# "ratio 0.92", "ratio **0.30**", "3.3x".
FIGURE = re.compile(
    rf"(?<![\w.\-/])(?:\*\*)?{RANGE}(?:\*\*)?\s?(?:{RATE_UNITS})(?![\w/])"
    # "1.13x", "0.80-0.95x", "3x", "0.76 x fio"; not "1000 x `io_bytes`" (a product)
    rf"|(?<![\w.\-/])(?:\*\*)?{NUMBER}(?:\s*(?:-|–)\s*{NUMBER})?(?:\*\*)?[x×](?![\w])"
    rf"|(?<![\w.\-/])(?:\*\*)?{DECIMAL}(?:\s*(?:-|–)\s*{DECIMAL})?(?:\*\*)?\s[x×](?![\w])"
    rf"|\bratios?\s*(?:of\s*)?(?:\*\*)?{NUMBER}"
)
# Words that make the figure a goal, budget, limit or setting, not a measurement.
GOAL_BEFORE = re.compile(
    r"(?:<=|>=|[<>≤≥]|±|\+-|\bat (?:most|least)|\bwithin|\bbudget|\btarget|\bgoal|\bup to"
    r"|\blimit|\bdefault|\bcap(?:ped)?|\bmax(?:imum)?|\bmin(?:imum)?|\bbelow|\babove"
    r"|\bunder|\bover|\bexceeds?|\bevery|\bper|\bthan)\W*(?:\S+\W+){0,3}$",
    re.IGNORECASE,
)
CODE_SPAN = re.compile(r"`[^`]*`")
# A table of measurements: a header naming a ratio, a probetop/tool column or
# a measured quantity ("ratio", "probetop / fio", "measured", "probetop
# median", "before ... after"), rows holding decimals.
MEASURED_HEADER = re.compile(
    r"^\|.*(?:\bratio\b|probetop / \w|\bmeasured\b|\bbefore\b.*\bafter\b|\| *diff\b"
    r"|probetop (?:median|eps|iops|rps|replies|holds|\w+/s))",
    re.IGNORECASE,
)
TABLE_DECIMAL = re.compile(r"\|[^|]*?(?<![\w.])\d+\.\d+[^|]*\|")
LINK = re.compile(r"\]\([^)]*\)")

# (page, text on the line): not a measured figure, with the reason.
ALLOWED: dict[tuple[str, str], str] = {
    ("docs/dashboard.md", "speed 1x -> 10x -> max"): "replay speed settings",
    ("docs/usage.md", "set the speed (1x, 10x, max)"): "replay speed settings",
    ("docs/metrics.md", "2^n and 1.5 x 2^n ns"): "histogram bucket bounds",
    ("docs/http.md", "2000 requests/s for 3 s"): "a test's workload",
    ("docs/http.md", "at 100 requests/s they"): "a workload in an explanation",
    ("docs/reliability-http.md", "an hour at 100 requests/s is"): "a workload: memory per hour",
    ("docs/icmp.md", "pings 127.0.0.1 at 200 requests/s"): "the demo's setting",
    ("docs/performance-budget.md", "50 ICMP panes at 10 pps each"): "the benchmark's scenario",
    # Stop latencies the reliability tests assert (stop within 2 s), not benchmark figures.
    ("docs/reliability-disk.md", "| laying out a new or short file"): "stop latency",
    ("docs/reliability-disk.md", "| the JIT warm-up"): "stop latency",
    ("docs/reliability-disk.md", "| the I/O loops"): "stop latency",
}


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def stated_figures(text: str) -> list[tuple[int, str]]:
    """(line number, figure) for each measured rate or ratio stated in
    ``text`` outside code; goals and settings are let through."""
    found = []
    in_fence = False
    in_table = measured_table = False
    before = ""  # the previous line: a goal word may end it ("at least\n0.8x")
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or line.startswith("    "):
            continue
        if line.startswith("|"):
            if MEASURED_HEADER.match(line) and not in_table:
                measured_table = True
            in_table = True
            row = not line.startswith("|--") and not MEASURED_HEADER.match(line)
            if measured_table and row and TABLE_DECIMAL.search(line):
                found.append((n, "a row of a table of measurements"))
                continue
        else:
            in_table = measured_table = False
        prose = LINK.sub("]", CODE_SPAN.sub("`code`", line))
        for m in FIGURE.finditer(prose):
            if re.match(r"(?:\*\*)?0\s", m.group(0)):  # "0 replies/s": a state, not a figure
                continue
            if GOAL_BEFORE.search(f"{before} {prose[: m.start()]}"):
                continue
            found.append((n, m.group(0)))
        before = prose
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_no_page_states_a_measured_figure_by_hand(page: Path) -> None:
    if page == GENERATED:
        return
    name = page.relative_to(REPO).as_posix()
    lines = page.read_text(encoding="utf-8").splitlines()
    stated = [
        f"{name}:{n}: {fig!r} in: {lines[n - 1].strip()[:140]}"
        for n, fig in stated_figures("\n".join(lines))
        if not any(p == name and text in lines[n - 1] for p, text in ALLOWED)
    ]
    assert not stated, (
        "measured figures stated by hand (link docs/figures.md instead, or add a goal "
        "word such as 'at least'; a setting goes in `code`):\n" + "\n".join(stated)
    )


def test_the_heuristic_flags_measurements_and_lets_goals_through() -> None:
    flagged = [
        "README: replay reads 212 MB/s.",
        "ICMP flood: 0.935-0.94x `ping -f` replies/s.",
        "probetop / fio ratio 0.84 at depth 32.",
        "the view: **209 B/s**, ratio **0.30**",
        "encode 1,148k samples/s (5.6x the json path)",
        "| job | fio | probetop / fio |\n|---|---|---|\n| psync | 48.9k | 1.06 |",
    ]
    for text in flagged:
        assert stated_figures(text), text
    passed = [
        "the target is at least 1.0x ping -f with one and two streams",
        "budget: <= 10 KB/s of terminal output",
        "send `--rate 100000` probes",
        "```\nprobetop icmp 127.0.0.1 --rate 1000  # 1000 pps\n```",
        "see [figures](figures.md) for the ratio",
        "within 1 ms of curl; up to 100k pps",
        "| option | default |\n|---|---|\n| `--interval` | 1.0 s |",
    ]
    for text in passed:
        assert not stated_figures(text), text


def test_the_generated_page_is_linked_from_the_readme() -> None:
    assert "docs/figures.md" in (REPO / "README.md").read_text(encoding="utf-8")
