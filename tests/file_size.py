"""Polling a file another process creates."""

from __future__ import annotations

from pathlib import Path


def size_of(path: Path) -> int:
    """Size of ``path`` in bytes, -1 while it does not exist. One stat, not
    exists() then stat(): a file can vanish between the two (probetop's
    start-up check creates a new target and removes it again)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def text_of(path: Path) -> str:
    """Text of ``path``, "" while it does not exist. One open, not exists()
    then read_text(): the same start-up check can remove it between the two."""
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
