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

import functools
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Action = Literal[
    "store", "store_true", "store_false", "append", "count", "store_const", "append_const"
]


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
    ``refused_exit``: the exit status of a refused or missing value.
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
    # The exit status when the value is refused (by ``parse`` or by the
    # command's settings) or, for a positional, when it is missing:
    # argparse's usage error 2 unless the reference tool's differs (ping
    # exits 1 for a bad -c/-s/-w/-l/-t/-S/-m value and for no destination).
    refused_exit: int = 2

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
class Spelling:
    """A reference tool's spelling of an option that a command reads as its own
    (fio's ``--numjobs 4`` is ``--jobs 4``), so a pasted command line runs.

    ``ours`` is the flag it becomes; ``""``: the value is the command's
    positional (fio's ``--filename=DEV`` is TARGET); None: accepted and
    ignored, ``note`` says why (ping's ``-n``: the output is numeric
    already). ``by_value`` maps each accepted value to the flag it means
    instead (fio's ``--direct=0`` is ``--buffered``); other values are
    refused. Only a spelling with the same meaning belongs here: one whose
    meaning differs gets a message, not an alias. One flag two tools spell
    differently has two entries, the first with a ``value_pattern``. The CLI lists every
    spelling in the command's ``--help``."""

    tool: str
    theirs: str
    ours: str | None
    takes_value: bool = True
    by_value: Mapping[str, str] | None = None
    note: str = ""
    # Two tools, one flag (hping3's -d SIZE, ping's -d alone): this spelling
    # takes the next word only when it matches (re.fullmatch); else the
    # command's next spelling of the same flag is read.
    value_pattern: str | None = None
    # A name the tool itself calls deprecated (sysbench 1.0's --num-threads):
    # set to anything but this default (with ``parse``: to a value above it,
    # sysbench 1.0.20's `if (num_threads > 1)`) it wins over ``ours`` wherever
    # either stands and the tool's warning is printed (``warning``); else it
    # is ignored, without a warning, as sysbench 1.0.20 does.
    deprecated_default: str | None = None
    # The tool's own warning line whenever this spelling is used, where it
    # is not the one above (sysbench's --test=, which it prints on stderr).
    warns: str | None = None
    warns_on_stderr: bool = False
    # The tool's own reading of the value (sysbench's INT check of
    # --num-threads): the value is checked with it wherever the spelling
    # stands, also when it is then ignored (``ours`` None) or at its default,
    # and an OptionValueError is the command's usage error, in the tool's
    # words; ``is_default`` compares the values it reads.
    parse: Callable[[str], Any] | None = None

    def warning(self) -> str:
        """The tool's line for a deprecated spelling that was used."""
        if self.warns is not None:
            return self.warns
        return f"WARNING: {self.theirs} is deprecated, use {self.ours} instead"

    def is_default(self, value: str) -> bool:
        """Whether the deprecated spelling set to ``value`` is ignored: with
        ``parse``, a value (as it reads it) not above the default's (sysbench
        reads an empty INT as 0); else the default itself, as a number where
        both read as one."""
        default = self.deprecated_default
        if self.parse is not None and default is not None:
            return bool(self.parse(value) <= self.parse(default))
        try:
            return float(value) == float(default or "")
        except ValueError:
            return value.strip() == default

    def describe(self) -> str:
        """One line of ``--help``: ``fio --numjobs V is --jobs V``."""
        theirs = f"{self.tool} {self.theirs}"
        if self.by_value:
            meaning = self.note or "the default"
            return ", ".join(
                f"{theirs if i == 0 else self.theirs}={value} is {flag or meaning}"
                for i, (value, flag) in enumerate(self.by_value.items())
            )
        arg = " V" if self.takes_value else ""
        if self.ours is None:
            return f"{theirs}{arg}: ignored ({self.note})" if self.note else f"{theirs}: ignored"
        return f"{theirs}{arg} is {self.ours + arg if self.ours else 'the target'}"


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A reference tool's options that a command knows and does not do.

    ``table`` rows: (flags, takes a value, why or what to do instead).
    ``options()`` makes one hidden option per flag, all storing the flag as
    typed in ``dest``, so ``given(values)`` finds it after parsing and
    ``message(flag)`` refuses it by name (exit 2). Without them argparse
    said only "unrecognized arguments", and for one that takes a value
    took the value for the command's positional (``ping -p ff host``:
    "unrecognized arguments: -p host")."""

    tool: str  # "curl", "ping"
    command: str  # "http", "icmp"
    table: tuple[tuple[tuple[str, ...], bool, str], ...]
    dest: str
    group: str | None = None

    def options(self) -> tuple[Option, ...]:
        def named(flag: str) -> Callable[[str], str]:
            return lambda _value: flag  # the value is dropped; the flag refused

        return tuple(
            Option(
                (flag,),
                why,
                named(flag) if takes_value else None,
                metavar="X" if takes_value else None,
                action="store" if takes_value else "store_const",
                const=None if takes_value else flag,
                dest=self.dest,
                group=self.group,
                hidden=True,
            )
            for flags, takes_value, why in self.table
            for flag in flags
        )

    def why(self, flag: str) -> str:
        return next((why for flags, _v, why in self.table if flag in flags), "")

    def given(self, values: Mapping[str, Any]) -> str | None:
        """The refused flag in parsed ``values`` (the last one given), or None."""
        flag = values.get(self.dest)
        return str(flag) if flag else None

    def message(self, flag: str) -> str:
        why = self.why(flag)
        hint = f" ({why})" if why else ""
        return (
            f"{self.tool} option {flag} is not supported by probetop {self.command}{hint}; "
            f"the supported subset is listed in docs/{self.command}.md and "
            f"`probetop {self.command} --help`"
        )


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A probe command: its name, help texts and options.

    ``own_common`` names common options (``--interval``, ``--time``) that this
    command defines itself with another meaning, so the CLI leaves them out
    of the common group (icmp's ``--interval`` is ping's send interval).
    ``spellings`` are the reference tool's names the command also reads.
    ``refused_exit``: the exit status of a usage error on this command's
    line (a refused value of its own or a common option, an unknown option)
    where the reference tool's differs from argparse's 2 (sysbench: 1); an
    ``Option``'s own ``refused_exit`` other than 2 wins.
    ``positionals_anywhere``: the command's positional values (curl's URLs)
    may also stand between and after its options, as curl reads them
    (argparse takes one run of them and would refuse the rest).
    """

    name: str
    help: str
    options: tuple[Option, ...]
    description: str = ""
    epilog: str = ""
    own_common: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)
    spellings: tuple[Spelling, ...] = ()
    refused_exit: int = 2
    positionals_anywhere: bool = False

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


def _c_number(text: str) -> bool:
    """Whether ``text`` may be a number as C reads one: ASCII, no ``_``
    (Python's int() and float() take ``1_0`` and non-ASCII digits)."""
    return text.isascii() and "_" not in text


def whole_number(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """Integers (``10``, ``-1``), at least ``minimum`` / at most ``maximum`` when given.
    ASCII digits only, as the reference tools' strtol/atoi read them: Python's
    int() also takes ``1_0`` (10) and other scripts' digits, which none does."""

    def parse(text: str) -> int:
        try:
            if not _c_number(text):
                raise ValueError(text)
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
            if not _c_number(text):
                raise ValueError(text)
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


# One grammar for every time option (--time, --sample-interval, ping's -i/-W/-w,
# curl's -m, fio's --ramp ...): a bare number is in the option's unit (seconds
# unless it says otherwise), a suffix names another, as fio's time options do.
@functools.cache
def _duration_re() -> re.Pattern[str]:
    # Compiled on first use, as fractions is imported: a one-off http call
    # parses no duration, and both cost its start-up (issue 28).
    return re.compile(
        r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d{1,3})?)\s*([a-zµμ]*)\s*$",
        re.IGNORECASE | re.ASCII,
    )


_NS_PER = {  # nanoseconds per unit: whole numbers, so the scaling is exact
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,  # the micro sign
    "μs": 10**3,  # the Greek letter mu, which keyboards also type
    "usec": 10**3,
    "ms": 10**6,
    "msec": 10**6,
    "s": 10**9,
    "sec": 10**9,
    "m": 60 * 10**9,
    "min": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86400 * 10**9,
}
DURATION_SPELLINGS = "seconds, or with a unit: 500ms, 90s, 2m, 1h; units ns us ms s m h d"


def parse_duration(text: str, *, unit: str = "s") -> float:
    """The duration ``text`` spells, in ``unit`` (a bare number is in ``unit``):
    ``parse_duration("2m") == 120.0``, ``parse_duration("1.5", unit="ms") == 1.5``.
    OptionValueError when it is no duration or not finite; the sign is kept."""
    m = _duration_re().match(text)
    suffix = m.group(2).lower() if m else ""
    if not m or (suffix and suffix not in _NS_PER):
        raise OptionValueError(f"not a duration: {text!r} ({DURATION_SPELLINGS})")
    from fractions import Fraction

    exact = Fraction(m.group(1)) * _NS_PER[suffix or unit] / _NS_PER[unit]
    try:
        return float(exact)  # 20us is 2e-05 exactly as 20e-6 is, not 20 * 1e-6
    except OverflowError:
        raise OptionValueError(f"must be a finite duration, got {text}") from None


def duration(*, positive: bool = False, unit: str = "s") -> Callable[[str], float]:
    """Durations in ``unit`` (``parse_duration``): ``0.2``, ``200ms``, ``20us``,
    ``2m``, ``1h``; never negative, and > 0 when ``positive``."""

    def parse(text: str) -> float:
        value = parse_duration(text, unit=unit)
        if positive and not value > 0:
            raise OptionValueError(f"must be a positive number, got {text}")
        if value < 0:
            raise OptionValueError(f"must be zero or a positive number, got {text}")
        return value

    return parse


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


# 4k, 1M, 1MB, 1MiB and 1Mi (Kubernetes' spelling) are all 2**20 (fio's kb_base=1024).
@functools.cache
def _size_re() -> re.Pattern[str]:
    return re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([kmgtp])i?b?|b?)\s*$", re.IGNORECASE | re.ASCII)


SIZE_SPELLINGS = "e.g. 512, 4k, 1M, 10G, 1GiB, 1Gi: k, M, G, T, P are powers of 1024"


def parse_byte_size(text: str) -> int:
    """Bytes from fio-style text: ``512``, ``4k``, ``1M``, ``2GiB``, ``1Gi``
    (k/m/g/t/p are powers of 1024, with or without ``i``/``b``/``ib``; a plain
    number is bytes). A fraction is taken when it is a whole number of bytes
    (``1.5G``, ``1.5k`` = 1536, which fio truncates to 1 byte; ``0.3k`` is refused)."""
    match = _size_re().match(text)
    if not match and text.strip().startswith("-"):
        raise OptionValueError(f"must be at least 0, got {text.strip()}")
    if not match:
        raise OptionValueError(f"not a size: {text!r} ({SIZE_SPELLINGS})")
    number, prefix = match.group(1), (match.group(2) or "").lower()
    from fractions import Fraction

    scaled = Fraction(number) * _SIZE_UNITS[prefix]
    if scaled.denominator != 1:
        raise OptionValueError(f"not a whole number of bytes: {text!r} ({SIZE_SPELLINGS})")
    return int(scaled)


def byte_size() -> Callable[[str], int]:
    """Sizes in bytes, fio's way (see ``parse_byte_size``)."""
    return parse_byte_size


def user_path(text: str | os.PathLike[str]) -> Path:
    """A path the user gave, with ``~`` and ``~user`` expanded as a shell
    expands them: a ``~user`` that names no user, or a ``~`` without a home,
    stays as written (``Path.expanduser`` raises RuntimeError there)."""
    path = Path(text)
    try:
        return path.expanduser()
    except RuntimeError:
        return path
