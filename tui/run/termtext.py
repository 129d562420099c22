"""Text from a recording, shown in a terminal, holds no terminal control.

Why: a recording may come from anyone (a colleague's file, one attached to
a bug report), and its strings (the command line, the host's name, a
probe's parameters, status and error messages, a metric's entity) were
written to the terminal as they were: ``probetop report their.jsonl`` set
the window's title, cleared the screen and turned the rest red from
``ESC ] 0;... BEL ESC [2J ESC [31m`` in the header's command (OSC 52
writes the clipboard the same way). The JSON output escapes them already.

Contract: ``printable(text)`` keeps text, newlines and tabs and writes every
other C0 or C1 control character, DEL and ESC included, as ``\\xNN``:
visible, never acted on. ``PrintableWriter(out)`` applies it to each
``write`` of a text stream; ``raw`` is the stream itself, for what
probetop draws with colour of its own (a chart, whose title and unit went
through ``printable`` first).
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every terminal control made visible (see above)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class PrintableWriter:
    """A text stream whose ``write`` passes through ``printable``; ``raw``
    is the wrapped stream, and the rest (``flush``, ``isatty`` ...) is its."""

    def __init__(self, out: TextIO) -> None:
        self.raw = out

    def write(self, text: str) -> int:
        return self.raw.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
