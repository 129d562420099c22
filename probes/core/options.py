"""Declarative command options: one spec per probe family, read by every front end.

Contract:
- A family declares its options once, as a ``CommandSpec`` of ``Option``
  records, in its front door (``probetop.probes.<family>``). The CLI renders
  the spec into argparse, the dashboard's add-probe prompt lists it as help,
  and a test checks that the family's docs page names every option.
- Value parsers here (``whole_number``, ``number``, ``choice_of`` ...) raise
  ``OptionValueError`` with a message that reads well after the option name
  (``--jobs: must be at least 1, got 0``). They only check what the value is;
  range rules that depend on other options stay in the family's settings
  (``validate``), with their own messages.
- Nothing here imports argparse: the spec is data, the CLI owns the rendering.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["store", "store_true", "store_false", "append", "count", "store_const"]


class OptionValueError(ValueError):
    """A command-line value does not parse; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Option:
    """One command-line option or positional argument.

    ``flags`` are argparse's names: ``("--threads",)``, ``("-H", "--header")``,
    or ``("url",)`` for a positional. ``parse`` turns the text into a value
    (None keeps the string). ``group`` titles the help section it appears in;
    ``hidden`` keeps it out of ``--help`` (accepted, or refused with a message).
    Options that share an ``exclusive`` name exclude each other (``--flood``,
    ``--rate`` and ``-i`` of icmp): giving two of them is a usage error.
    """

    flags: tuple[str, ...]
    help: str
    parse: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    action: Action = "store"
    const: Any = None
    dest: str | None = None
    nargs: str | int | None = None
    group: str | None = None
    hidden: bool = False
    exclusive: str | None = None

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def name(self) -> str:
        """The attribute the parsed value lands in (argparse's ``dest``)."""
        if self.dest:
            return self.dest
        longest = max(self.flags, key=len)
        return longest.lstrip("-").replace("-", "_")

    @property
    def display(self) -> str:
        """How users write it: ``--threads N`` or ``URL``."""
        if self.positional:
            return (self.metavar or self.flags[0]).upper()
        flag = max(self.flags, key=len)
        if self.action in ("store_true", "store_false", "count", "store_const"):
            return flag
        return f"{flag} {self.metavar or self.name.upper()}"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A probe command: its name, help texts and options.

    ``own_common`` names common options (``--interval``, ``--time``) that this
    command defines itself with another meaning, so the CLI leaves them out
    of the common group (icmp's ``--interval`` is ping's send interval).
    """

    name: str
    help: str
    options: tuple[Option, ...]
    description: str = ""
    epilog: str = ""
    own_common: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)

    def option(self, name: str) -> Option:
        for opt in self.options:
            if opt.name == name:
                return opt
        raise KeyError(name)

    def usage_lines(self) -> list[str]:
        """One line per visible option (``--threads N  worker threads``), for
        the dashboard's add-probe prompt and generated docs."""
        # Help texts are written for argparse, which prints "%%" as "%".
        return [
            f"{opt.display:<24} {opt.help.replace('%%', '%')}"
            for opt in self.options
            if not opt.hidden
        ]


# -- value parsers -----------------------------------------------------------


def whole_number(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """Integers (``10``, ``-1``), at least ``minimum`` / at most ``maximum`` when given."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise OptionValueError(f"not a whole number: {text!r}") from None
        if minimum is not None and value < minimum:
            raise OptionValueError(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise OptionValueError(f"must be at most {maximum}, got {value}")
        return value

    return parse


def number(*, positive: bool = False, nonnegative: bool = False) -> Callable[[str], float]:
    """Finite numbers; ``positive`` (> 0) or ``nonnegative`` (>= 0)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise OptionValueError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise OptionValueError(f"must be a finite number, got {text}")
        if positive and not value > 0:
            raise OptionValueError(f"must be a positive number, got {text}")
        if nonnegative and value < 0:
            raise OptionValueError(f"must be zero or a positive number, got {text}")
        return value

    return parse


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$")
_DURATION_SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}


def duration(*, positive: bool = False) -> Callable[[str], float]:
    """Seconds from ``0.2``, ``200ms``, ``20us``, ``500 ns``, ``1s`` (no unit:
    seconds); never negative, and > 0 when ``positive``."""

    def parse(text: str) -> float:
        m = _DURATION.match(text)
        if not m:
            raise OptionValueError(f"not a duration: {text!r} (e.g. 0.2, 200ms, 20us)")
        value = float(m.group(1)) * _DURATION_SCALE[m.group(2)]
        if not math.isfinite(value):
            raise OptionValueError(f"must be a finite duration, got {text}")
        if positive and not value > 0:
            raise OptionValueError(f"must be a positive duration, got {text}")
        return value

    return parse


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)


def parse_byte_size(text: str) -> int:
    """Bytes from fio-style text: ``512``, ``4k``, ``1M``, ``2GiB`` (k/m/g/t/p are
    powers of 1024, an optional trailing ``b``/``ib``; a plain number is bytes)."""
    match = _SIZE_RE.match(text)
    if not match:
        raise OptionValueError(f"not a size: {text!r} (use e.g. 512, 4k, 1M, 10G)")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


def byte_size() -> Callable[[str], int]:
    """Sizes in bytes, fio's way (see ``parse_byte_size``)."""
    return parse_byte_size
