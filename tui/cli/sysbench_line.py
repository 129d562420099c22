"""sysbench's command-line forms, rewritten into probetop's before argparse.

sysbench's usage is ``sysbench [options]... [testname] [command]``, with the
0.4-era ``--test=TEST`` for the test name. probetop's is ``probetop cpu
[options]`` (the test's options after its name). ``sysbench_argv(args)``
turns the first into the second, in one place (``tui.main.main`` calls it
before the parser), and only when the line is surely sysbench's:

- the test is named: its first word is ``cpu``, ``mem`` or ``memory``
  (sysbench's name of ``mem``), possibly after options, or ``--test=cpu`` /
  ``--test=memory`` names it;
- options before the test name go after it (every common option is also a
  cpu/mem option, so a probetop line such as ``--time 5 cpu`` keeps its
  meaning); ``--test=TEST`` and ``memory`` become the command name
  (``--test=TEST`` is also kept, first, for the command's spelling of it
  to print sysbench's warning);
- one word after the test is sysbench's command: ``run`` ends the line, and the run is headless
  (``--headless`` is added unless --json, --headless, --detach or --remote
  is given), as sysbench prints its report and exits at --time on a
  terminal too; ``help`` is the command's ``--help`` (sysbench prints the
  test's options, exit 0); ``prepare`` and ``cleanup`` exit 1 with
  sysbench's message (the cpu and memory tests implement neither); another
  word exits 1 with sysbench's ``Unknown command: WORD``, and a second word
  with its ``Unrecognized command line argument: WORD``.

``sysbench_version(args)`` is what ``TEST --version`` prints (exit 0), as
``sysbench cpu --version``.

Anything else (another command, ``--help``/``--version`` before the test,
two test names) is returned unchanged: argparse decides.
"""

from __future__ import annotations

from collections.abc import Sequence

from probetop.probes.core.base import UsageProbeError

TESTS = {"cpu": "cpu", "mem": "mem", "memory": "mem"}
"""sysbench's test names (and probetop's ``mem``) -> probetop's command."""
SYSBENCH_NAMES = {"cpu": "cpu", "mem": "memory"}
COMMAND_WORDS = ("run", "prepare", "cleanup", "help")
HEADLESS_ALREADY = ("--headless", "--json", "--detach", "--remote")
ROOT_ONLY = ("-h", "--help", "--version")


class SysbenchCommandError(UsageProbeError):
    """sysbench's refusal of a command its test does not implement (exit 1)."""

    exit_code = 1


def _value_takers() -> tuple[set[str], set[str]]:
    """The flags of cpu's, mem's and the common options whose value may be
    the next word (``--time 5``), so it is not taken for a test or command:
    (those whose value is always the next word, those whose value is
    optional: ``--sweep [LIST]``)."""
    from probetop.tui import commands
    from probetop.tui.cli.plan import COMMON_OPTIONS

    specs = [getattr(commands.load(name), "SPEC", None) for name in ("cpu", "mem")]
    options = [o for spec in specs if spec is not None for o in spec.options]
    flags: set[str] = set()
    optional: set[str] = set()
    for option in (*COMMON_OPTIONS, *options):
        if option.positional or option.action not in ("store", "append"):
            continue
        (optional if option.nargs == "?" else flags).update(option.flags)
    for spec in specs:
        spellings = spec.spellings if spec is not None else ()
        flags.update(sp.theirs for sp in spellings if sp.takes_value and not sp.by_value)
    return flags, optional


def _looks_sysbench(args: Sequence[str]) -> bool:
    return any(a in TESTS or a.startswith("--test=") for a in args)


VERSION_WORDS = ("--version", "--version=on", "--version=true", "--version=1")


def sysbench_version(args: Sequence[str]) -> str | None:
    """What ``sysbench TEST --version`` prints (``sysbench 1.0.20``, and the
    probetop that follows it), when ``args`` is such a line: a test named
    (its word or --test=) before a --version; else None. ``--version``
    before the test is probetop's own."""
    args = list(args)
    if "--" in args:
        return None
    named = [i for i, a in enumerate(args) if a in TESTS or a.startswith("--test=")]
    if not named or not any(a in VERSION_WORDS for a in args[named[0] + 1 :]):
        return None
    if any(a in ROOT_ONLY for a in args[: named[0]]):
        return None
    from probetop.probes import version
    from probetop.probes.core.sysbench import SYSBENCH_VERSION

    return f"sysbench {SYSBENCH_VERSION} (probetop {version()})"


#: The options sysbench 1.0.20 reads from a --config-file: its general ones
#: (src/sysbench.c, sb_rand.c, sb_logger.c), registered before the file is
#: read; a test's own (--cpu-max-prime, --memory-*) are not, as in sysbench.
#: help, version and config-file itself are left out (the file is read once).
CONFIG_FILE_OPTIONS = frozenset(
    {
        *("threads", "events", "time", "forced-shutdown", "thread-stack-size", "rate"),
        *("report-interval", "report-checkpoints", "debug", "validate", "tx-rate"),
        *("max-requests", "max-time", "num-threads", "rand-type", "rand-spec-iter"),
        *("rand-spec-pct", "rand-spec-res", "rand-seed", "rand-pareto-h", "verbosity"),
        *("percentile", "histogram"),
    }
)
#: sysbench's list options: every value of a line, comma-joined; others take the first.
_LIST_OPTIONS = frozenset(("report-checkpoints",))


def config_file_values(text: str) -> list[tuple[str, list[str]]]:
    """sysbench 1.0.20's read_config (src/sb_options.c): each line with an
    ``=`` is NAME (everything before it, spaces kept) and its values: blanks
    skipped, ``#`` ends the line, a quoted value ('...' or "...") runs to its
    closing quote, an unquoted one to a comma or a blank. A line without ``=``
    is skipped. ValueError (sysbench's "unexpected EOL on line N") for an
    unclosed quote."""
    out: list[tuple[str, list[str]]] = []
    for nline, line in enumerate(text.splitlines(keepends=True), 1):
        name, sep, rest = line.partition("=")
        if not sep:
            continue
        values: list[str] = []
        i = 0
        while i < len(rest):
            ch = rest[i]
            if ch.isspace():
                i += 1
            elif ch == "#":
                break
            elif ch in "'\"":
                end = rest.find(ch, i + 1)
                if end < 0:
                    raise ValueError(f"unexpected EOL on line {nline}")
                values.append(rest[i + 1 : end])
                i = end + 1
                while i < len(rest) and rest[i] != ",":
                    i += 1
                i += 1
            else:
                j = i
                while j < len(rest) and rest[j] != "," and not rest[j].isspace():
                    j += 1
                values.append(rest[i:j])
                i = j + 1
        out.append((name, values))
    return out


def expand_config_files(args: Sequence[str]) -> list[str]:
    """``--config-file=FILE`` (sysbench's; ``--config-file FILE`` too) replaced,
    where it stands, by ``--NAME=VALUE`` for each of the file's lines that
    names one of ``CONFIG_FILE_OPTIONS`` (later options override it, earlier
    ones are overridden, as sysbench sets them in order); other names are
    ignored, as sysbench ignores them. A file that cannot be read prints
    ``FILE: REASON`` on stderr and the line runs on without it, as sysbench's
    perror; an unclosed quote is sysbench's "unexpected EOL" (exit 1)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--config-file" and i + 1 < len(args):
            path, i = args[i + 1], i + 2
        elif token.startswith("--config-file="):
            path, i = token.partition("=")[2], i + 1
        else:
            out.append(token)
            i += 1
            continue
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
        except OSError as exc:
            import sys

            print(f"{path}: {exc.strerror or exc}", file=sys.stderr)
            continue
        try:
            lines = config_file_values(text)
        except ValueError as exc:
            raise SysbenchCommandError(f"--config-file {path}: {exc}") from None
        for name, values in lines:
            if name not in CONFIG_FILE_OPTIONS or not values:
                continue
            value = ",".join(values) if name in _LIST_OPTIONS else values[0]
            out.append(f"--{name}={value}")
    return out


def sysbench_argv(args: Sequence[str]) -> list[str]:
    """``args`` in probetop's form if it is a sysbench cpu/memory line, else
    unchanged. Raises ``SysbenchCommandError`` (exit 1) for ``prepare`` and
    ``cleanup``, a command word sysbench does not know, and a word after the
    command word, in sysbench's words."""
    args = list(args)
    if not _looks_sysbench(args) or "--" in args:
        return args
    args = expand_config_files(args)
    takes_value, may_take = _value_takers()
    words: list[int] = []  # indexes of the bare words (not option values)
    tests: set[str] = set()
    dropped: set[int] = set()
    i = 0
    while i < len(args):
        token = args[i]
        if token.startswith("--test="):
            tests.add(token.partition("=")[2])
            dropped.add(i)
        elif token.startswith("-"):
            if token in takes_value and i + 1 < len(args):
                i += 1  # its value, whatever it looks like
            elif token in may_take and i + 1 < len(args):
                after = args[i + 1]
                if not after.startswith("-") and after not in (*TESTS, *COMMAND_WORDS):
                    i += 1  # `--sweep 1,2,4`
        else:
            words.append(i)
        i += 1
    first = args[words[0]] if words else None
    if first in TESTS:
        tests.add(first)
        dropped.add(words.pop(0))
    elif first is not None and first not in COMMAND_WORDS:
        return args  # another command (`probetop report cpu.jsonl`): not sysbench's
    named = {TESTS.get(t) for t in tests}
    if len(named) != 1 or None in named:
        return args  # no test, an unknown or a second one: argparse says
    if len(words) > 1 and not any(a in ROOT_ONLY for a in args[: min(dropped)]):
        # sysbench takes the first word after the test as its command and
        # refuses the next one, whatever both are (`memory run foo`, `cpu foo run`)
        raise SysbenchCommandError(f"Unrecognized command line argument: {args[words[1]]}")
    if any(a in ROOT_ONLY for a in args[: min(dropped)]):
        return args  # probetop's own --help / --version before the command
    command = named.pop()
    assert command is not None
    word = args[words[0]] if words else None
    if word is not None and word not in COMMAND_WORDS:
        raise SysbenchCommandError(f"Unknown command: {word}")  # sysbench's words, exit 1
    rest = [a for k, a in enumerate(args) if k not in dropped and (not words or k != words[0])]
    # --test= stays (first), for the command's spelling to read and warn as sysbench
    rest = [f"--test={t}" for t in sorted(tests) if any(a == f"--test={t}" for a in args)] + rest
    if word in ("prepare", "cleanup"):
        raise SysbenchCommandError(
            f"'{SYSBENCH_NAMES[command]}' test does not implement the '{word}' command "
            f"(as in sysbench; `probetop {command} ... run` runs it)"
        )
    if word == "help":
        return [command, "--help"]
    if word == "run":
        headless = [] if any(a.split("=")[0] in HEADLESS_ALREADY for a in rest) else ["--headless"]
        return [command, *rest, *headless, "run"]
    return [command, *rest]
