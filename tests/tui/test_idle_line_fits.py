"""The system panes' "N idle hidden: ..." and "gone: ..." lines fit the pane.

Found by a hostile review in tmux at 80x24 with 9 loop devices: the disk
pane printed `9 idle hidden: loop0 loop1 ... loop8  (i: sh`, its key hint
cut. The names that fit are shown, the rest counted, the hint kept whole.
"""

from __future__ import annotations

from probetop.tui.ui.panes.system import PANE_CHROME, names_line


def test_the_hint_stays_whole_at_80_columns() -> None:
    room = 80 - PANE_CHROME
    loops = [f"loop{i}" for i in range(9)]
    line = names_line("9 idle hidden: ", loops, "  (i: show)", room, " ")
    assert len(line) <= room and line.endswith("  (i: show)")
    shown = line.removeprefix("9 idle hidden: ").removesuffix("  (i: show)").split()
    assert shown[-1].startswith("+") and len(shown) - 1 + int(shown[-1][1:]) == 9


def test_a_line_that_fits_is_unchanged() -> None:
    assert names_line("2 idle hidden: ", ["a", "b"], "  (i: show)", 76, " ") == (
        "2 idle hidden: a b  (i: show)"
    )


def test_gone_devices_are_counted_when_they_do_not_fit() -> None:
    gone = [f"veth{i} (3 s ago)" for i in range(20)]
    line = names_line("gone: ", gone, "", 76, ", ")
    assert len(line) <= 76 and line.startswith("gone: veth0 (3 s ago), ")
    assert line.endswith(f"+{20 - line.count('(3 s ago)')}")
