"""probetop's command line: the parser (rendered from the families' option
specs) and the run plan built from it.

Contract:
- ``build_parser()`` renders ``COMMON_OPTIONS`` and every command's
  ``CommandSpec`` into argparse (``build_parser(commands_needed(argv))``:
  only the commands ``argv`` names, the others as bare names). Value errors
  from a spec's parsers become argparse usage errors (exit 2,
  ``argument --jobs: must be at least 1``).
- ``make_plan(namespace)`` reads the parsed namespace exactly once into a
  frozen ``RunPlan``; nothing downstream sees the namespace.
- ``parse_command_line(line)`` does both for the dashboard's add-probe prompt
  and raises ``CommandLineError`` instead of exiting.
- Imports no UI: ``tui.main`` decides whether a screen is shown.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import re
import shlex
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any, NoReturn

from probetop.probes import version
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import CommandSpec, Option, OptionValueError, Spelling
from probetop.tui import commands
from probetop.tui.cli.plan import (
    COMMON_OPTIONS,
    OLD_INTERVAL,
    CommonOptions,
    NoSettings,
    RunPlan,
    ToolWarning,
)

MAIN_DESCRIPTION = """\
A terminal dashboard of live probes that measure like fio, sysbench, ping -f
and curl do. With no command it shows this machine's CPU, disks and network.
"""

MAIN_EPILOG = """\
examples:
  probetop                          passive CPU / disk / network panes
  probetop demo                     every probe against embedded local targets
  probetop cpu --threads 2 --headless      sysbench-style CPU report
  probetop --record s.jsonl --time 60 --headless   record a minute, no UI
  probetop replay s.jsonl           play a recording in the same panes
  probetop report s.jsonl           text summary and charts of a recording
  probetop compare a.jsonl b.jsonl  what changed between two recordings, and is it significant
  probetop cpu --time 10 --assert 'cpu.events_per_second>2900'   exit 99 if not

Run `probetop COMMAND --help` for a command's options.
"""


class CommandLineError(Exception):
    """A command line typed into the dashboard did not parse (argparse's message)."""


def _argparse_type(parse: Callable[[str], Any], refused_exit: int = 2) -> Callable[[str], Any]:
    """A spec parser as an argparse type: its message becomes the usage
    error, which exits with ``refused_exit`` (``Parser``)."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except OptionValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    convert.refused_exit = refused_exit  # type: ignore[attr-defined]
    return convert


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors exit with what the option's
    spec says (``Option.refused_exit``): a value its type refused, and a
    positional left out (given ``nargs="?"`` by ``add_option`` and checked
    here after parsing, with argparse's own message). Every other usage
    error (an unknown option, a missing option value, an extra word) is
    argparse's exit 2, as before. Subparsers are of this class too."""

    refused_exit = 2

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        try:
            return super()._get_value(action, arg_string)  # type: ignore[misc]
        except argparse.ArgumentError:
            self.refused_exit = getattr(action.type, "refused_exit", 2)
            raise

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and getattr(self, "positionals_anywhere", False):
            extras = self._take_late_positionals(parsed, extras)
        missing = [
            a
            for a in self._actions
            if getattr(a, "missing_exit", None) is not None and getattr(parsed, a.dest) is None
        ]
        if missing:
            names = ", ".join(str(a.metavar or a.dest) for a in missing)
            self.print_usage(sys.stderr)
            self.exit(
                max(getattr(a, "missing_exit", 2) for a in missing),
                f"{self.prog}: error: the following arguments are required: {names}\n",
            )
        return parsed, extras

    def _take_late_positionals(self, parsed: argparse.Namespace, extras: list[str]) -> list[str]:
        """Positional values past the first run of them (curl's ``URL -o f
        URL2``), which argparse leaves over, appended to the list positional
        in command-line order; the rest stays over (an unknown option)."""
        action = next(
            (a for a in self._actions if not a.option_strings and a.nargs in ("*", "+")), None
        )
        if action is None:
            return extras
        rest: list[str] = []
        late: list[Any] = []
        for i, arg in enumerate(extras):
            if arg == "--":
                rest += extras[i:]
                break
            if arg.startswith("-") and arg != "-":
                rest.append(arg)
            else:
                late.append(self._get_value(action, arg))
        if late:
            setattr(parsed, action.dest, [*(getattr(parsed, action.dest, None) or []), *late])
        return rest

    def error(self, message: str) -> NoReturn:
        # argparse quotes the argument it refuses ("invalid choice:
        # 'http://user:pw@host/'"): the credentials in it never reach the
        # terminal or a CI log (probes/record/redaction.py).
        from probetop.probes.record import redact_text

        self.print_usage(sys.stderr)
        self.exit(self.refused_exit, f"{self.prog}: error: {redact_text(message)}\n")


def add_option(
    parser: argparse.ArgumentParser | Any,
    option: Option,
    *,
    suppress_default: bool = False,
    refused_exit: int = 2,
) -> None:
    """Render one ``Option`` into argparse (``parser`` may be a group).

    ``suppress_default`` keeps an option's default out of the namespace, so a
    common option given before the command name is not reset by the
    sub-parser's copy of it. ``refused_exit``: the command's exit status for
    a refused value (``CommandSpec.refused_exit``), where the option's own is 2."""
    if option.refused_exit == 2 and refused_exit != 2:
        option = dataclasses.replace(option, refused_exit=refused_exit)
    kwargs: dict[str, Any] = {"help": argparse.SUPPRESS if option.hidden else option.help}
    if option.action not in ("store_true", "store_false", "count", "store_const", "append_const"):
        if option.parse is not None:
            kwargs["type"] = _argparse_type(option.parse, option.refused_exit)
        if option.metavar:
            kwargs["metavar"] = option.metavar
        if option.choices is not None:
            kwargs["choices"] = option.choices
        if option.nargs is not None:
            kwargs["nargs"] = option.nargs
    if option.action != "store":
        kwargs["action"] = option.action
    if option.action in ("store_const", "append_const") or (
        option.nargs == "?" and option.const is not None
    ):
        kwargs["const"] = option.const  # nargs="?": the value of the bare flag
    if not option.positional:
        if option.dest:
            kwargs["dest"] = option.dest
        kwargs["default"] = argparse.SUPPRESS if suppress_default else option.default
    elif option.default is not None:
        kwargs["default"] = option.default
    # A positional whose absence exits otherwise than argparse's 2: optional
    # to argparse, required by Parser.parse_known_args with that status.
    late = option.positional and option.nargs is None and option.refused_exit != 2
    if late:
        kwargs["nargs"] = "?"
    action = parser.add_argument(*option.flags, **kwargs)
    if late:
        setattr(action, "missing_exit", option.refused_exit)  # noqa: B010 (an extra attribute)


def add_spec(parser: argparse.ArgumentParser, spec: CommandSpec) -> None:
    """A command's own options, in the groups its spec names.

    Options sharing an ``exclusive`` name go into one mutually exclusive
    group. An option that lands in a common option's place (icmp's own
    ``--sample-interval``) keeps its default out of the namespace, so the
    common option given before the command name still counts."""
    groups: dict[str | None, Any] = {None: parser}
    exclusive: dict[str, Any] = {}
    common = {option.name for option in COMMON_OPTIONS}
    for option in spec.options:
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        target = groups[option.group]
        if option.exclusive is not None:
            if option.exclusive not in exclusive:
                exclusive[option.exclusive] = target.add_mutually_exclusive_group()
            target = exclusive[option.exclusive]
        add_option(
            target, option, suppress_default=option.name in common, refused_exit=spec.refused_exit
        )


def add_common(
    parser: argparse.ArgumentParser,
    *,
    suppress: bool,
    skip: Sequence[str] = (),
    hidden: Collection[str] = (),
    refused_exit: int = 2,
) -> None:
    """The common options, but those in ``skip``; those in ``hidden`` are
    parsed (so a command can refuse them by name) and left out of its help."""
    group = parser.add_argument_group("common options")
    for option in COMMON_OPTIONS:
        if option.flags[0] not in skip:
            if option.flags[0] in hidden:
                option = dataclasses.replace(option, hidden=True)
            shared = option.flags[0] in SHARED_WITH_REFERENCE
            add_option(
                group, option, suppress_default=suppress, refused_exit=refused_exit if shared else 2
            )


SHARED_WITH_REFERENCE = ("--time",)
"""Common options the reference tools have too (sysbench's --time): a command
that exits as its tool for a refused value (cpu, mem: 1) does so for these;
probetop's own (--metrics, --assert, --record ...) keep its usage status 2."""


def commands_needed(argv: Sequence[str]) -> set[str] | None:
    """The command modules parsing ``argv`` needs: those it names (bare
    ``probetop``: none), or None (all) when it asks for the main help (a
    ``-h``/``--help`` before any command: that page lists every command).
    ``probetop iops --help`` is the iops page alone, so it loads iops alone.
    Loading every command module (and its family's front door) cost a fifth
    of the dashboard's start-up (profiled), for a parser that uses one of
    them."""
    names = set(commands.PROBE_COMMANDS + commands.OTHER_COMMANDS)
    needed: set[str] = set()
    for arg in argv:
        if arg in ("-h", "--help") and not needed:
            return None
        if arg in names:
            needed.add(arg)  # an option value named so costs a load
    return needed


class _VersionAction(argparse.Action):
    """--version, looking the version up only when asked (see probes.version)."""

    def __init__(self, option_strings: list[str], dest: str, **kw: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        print(f"probetop {version()}")  # stdout, as argparse's own version action
        parser.exit()


def build_parser(only: set[str] | None = None, *, others: bool = True) -> argparse.ArgumentParser:
    """The whole parser; with ``only``, the other commands are names without
    options (enough to parse a command line naming none of them), or
    (``others=False``) left out: for a command line whose command is known to
    be one of ``only`` (tui.fastpath), where they decide nothing and cost a
    parser each."""
    parser = Parser(
        prog="probetop",
        description=MAIN_DESCRIPTION,
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        # argparse matches every option of the whole line against the top
        # level's names by prefix, also after the command name: compare's
        # --metric was refused as ambiguous (--metrics, --metrics-linger).
        allow_abbrev=False,
    )
    parser.add_argument("--version", action=_VersionAction)
    add_common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is not None and others:
        for name in commands.PROBE_COMMANDS + commands.OTHER_COMMANDS:
            if name not in only:
                sub.add_parser(name)
    for name, module in commands.available(only):
        spec: CommandSpec = module.SPEC
        epilog = "\n".join(text for text in (spec.epilog, spellings_epilog(spec)) if text)
        p = sub.add_parser(
            name,
            help=spec.help,
            description=spec.description or spec.help,
            epilog=epilog or None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_spec(p, spec)
        p.refused_exit = spec.refused_exit  # type: ignore[attr-defined]  # a Parser: its errors
        p.positionals_anywhere = spec.positionals_anywhere  # type: ignore[attr-defined]
        # A command that runs no probes refuses the options only a live run
        # reads (refuse_ignored, --detach): its --help does not offer them.
        runs_probes = name in commands.PROBE_COMMANDS or name == "demo"
        refused = () if runs_probes else (*(f for _d, f in LIVE_RUN_OPTIONS), "--detach")
        if name in NO_DASHBOARD:
            refused = (*refused, "--theme")
        # A common option the spec declares itself (icmp's --sample-interval,
        # its -i/--interval) is the spec's: the common copy is left out.
        own = {flag for option in spec.options for flag in option.flags}
        skip = (*spec.own_common, *(o.flags[0] for o in COMMON_OPTIONS if own & set(o.flags)))
        add_common(p, suppress=True, skip=skip, hidden=refused, refused_exit=spec.refused_exit)
    return parser


_NEGATIVE_NUMBER = re.compile(r"^-\d|^-\.\d")


def attach_negative_values(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``--time -1`` as ``--time=-1`` and ``-c -1`` as ``-c-1``, so the value
    reaches the option's own check.

    argparse reads ``-1`` as an option name whenever a command has options
    that look like negative numbers (``-4``/``-6``), and answers "expected one
    argument", which hides the real problem. Joining the value to its option
    (long and short spellings alike: ``icmp -c``, ``http -m``) lets the
    option's parser say "must be at least 0, got -1" in every command.
    """
    takes_value: set[str] = set()
    for action in _all_actions(parser):
        if action.option_strings and action.nargs != 0:
            takes_value.update(action.option_strings)
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        token = items[i]
        if token in takes_value and i + 1 < len(items) and _NEGATIVE_NUMBER.match(items[i + 1]):
            # A short option takes an attached value as is; a long one after "=".
            joint = "=" if token.startswith("--") else ""
            out.append(f"{token}{joint}{items[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                actions.extend(sub._actions)
    return actions


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _value_takers(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings whose next token is surely their value."""
    return {
        flag
        for action in parser._actions
        if action.option_strings and action.nargs not in (0, "?")
        for flag in action.option_strings
    }


def read_spellings(
    parser: argparse.ArgumentParser, argv: Sequence[str], warned: list[Spelling] | None = None
) -> list[str]:
    """``argv`` with reference tools' spellings written as the command's own.

    Two rules, one place: a ``--name_with_underscores`` whose dashed form is
    an option (fio's ``--rate_iops``, ``--cpus_allowed``) is that option, in
    every command; and a command's ``CommandSpec.spellings`` (fio's
    ``--numjobs 4`` is ``--jobs 4``, ``--direct=0`` is ``--buffered``,
    sysbench's ``--num-threads``, ping's ``-n``) are read as declared. A
    value no spelling maps is a usage error naming the values it takes.
    A deprecated spelling (``Spelling.deprecated_default``) that is not at
    its default is moved after the command's options, so it wins as it does
    in the tool, and added to ``warned`` in the order the command declares
    them, as is a spelling that always warns (sysbench's ``--test=``). A
    spelling's value is checked by its ``parse`` first, ignored or not. Option
    values and everything after ``--`` are left alone."""
    subs = _subparsers(parser)
    current: argparse.ArgumentParser = parser
    spelled: dict[str, list[Spelling]] = {}
    declared: Sequence[Spelling] = ()
    takes_value = _value_takers(parser)
    out: list[str] = []
    winners: dict[str, str] = {}  # deprecated spellings in force: theirs -> value
    items = list(argv)
    tail: list[str] = []
    i = 0
    while i < len(items):
        token = items[i]
        i += 1
        if token == "--":
            tail = items[i - 1 :]
            break
        if current is parser and token in subs:
            current = subs[token]
            takes_value = _value_takers(current)
            module = commands.load(token) if token in commands.PROBE_COMMANDS else None
            spec = getattr(module, "SPEC", None)
            spelled = {}
            declared = spec.spellings if spec else ()
            for sp in declared:
                spelled.setdefault(sp.theirs, []).append(sp)
            out.append(token)
            continue
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        known = current._option_string_actions
        valued = next((sp for sp in spelled.get(name, ()) if sp.by_value is not None), None)
        if valued is not None and eq:
            out.extend(_respelled(current, valued, value))  # fio's --direct=1, --sync=0
            if valued.warns is not None and warned is not None:
                warned.append(valued)
            continue
        if not token.startswith("-") or name in known:
            out.append(token)
            if name in takes_value and not eq and i < len(items):
                out.append(items[i])  # its value, whatever it looks like
                i += 1
            continue
        dashed = name.replace("_", "-")
        if name.startswith("--") and dashed in known:
            items.insert(i, dashed + eq + value)  # read again as the option it is
            continue
        pieces = _unbundled(current, spelled, token) if spelled else None
        if pieces is not None:
            items[i:i] = pieces  # each letter read again on its own, as getopt does
            continue
        following = value if eq else items[i] if i < len(items) else None
        spelling = _pick(spelled.get(name) or spelled.get(dashed) or [], following)
        if spelling is None:
            out.append(token)
            continue
        if spelling.takes_value and not eq and i < len(items):
            value = items[i]
            i += 1
        if spelling.parse is not None and spelling.takes_value:
            try:
                spelling.parse(value)  # the tool's check, also of a value it then ignores
            except OptionValueError as exc:
                current.error(str(exc))  # the command's usage status (sysbench's 1)
        if spelling.deprecated_default is not None:
            if spelling.is_default(value):
                winners.pop(spelling.theirs, None)  # ignored, as the tool does
            else:
                winners[spelling.theirs] = value
            continue
        out.extend(_respelled(current, spelling, value))
    for sp in declared:
        if sp.theirs in winners:
            out.extend(_respelled(current, sp, winners[sp.theirs]))
            if warned is not None:
                warned.append(sp)
    return out + tail


def _unbundled(
    parser: argparse.ArgumentParser, spelled: dict[str, list[Spelling]], token: str
) -> list[str] | None:
    """A bundle of short flags that holds a reference spelling (ping's
    ``-nc3``, ``-qn``, ``-Cq``) as the separate words getopt reads in it:
    ``["-n", "-c", "3"]``. None where the token is not such a bundle (a
    bundle of the command's own flags is argparse's to read, as before)."""
    if not token.startswith("-") or token.startswith("--") or len(token) < 3:
        return None
    known = parser._option_string_actions
    pieces: list[str] = []
    has_spelling = False
    for at, letter in enumerate(token[1:], start=1):
        flag, rest = f"-{letter}", token[at + 1 :]
        action = known.get(flag)
        if action is not None:
            if action.nargs == "?":
                return None  # an optional value: argparse's own reading
            takes_value = action.nargs != 0
        elif flag in spelled:
            spelling = _pick(spelled[flag], rest or None)
            if spelling is None:
                return None
            takes_value, has_spelling = spelling.takes_value, True
        else:
            return None  # not a bundle of flags: argparse says what it is
        pieces.append(flag)
        if takes_value:
            if rest:
                pieces.append(rest)  # the rest of the word is its value
            break
    return pieces if has_spelling else None


def _pick(spellings: list[Spelling], following: str | None) -> Spelling | None:
    """The spelling a flag means here: the first whose ``value_pattern`` (if
    any) the word after it matches (hping3's ``-d 120``), else the last
    (ping's ``-d`` alone)."""
    import re

    for sp in spellings[:-1]:
        if sp.value_pattern is None or (
            following is not None and re.fullmatch(sp.value_pattern, following)
        ):
            return sp
    return spellings[-1] if spellings else None


def _respelled(parser: argparse.ArgumentParser, spelling: Spelling, value: str) -> list[str]:
    """What one reference spelling (and its value) is on this command line."""
    if spelling.by_value is not None:
        flag = spelling.by_value.get(value.strip())
        if flag is None:
            parser.error(
                f"{spelling.tool}'s {spelling.theirs} takes "
                f"{' or '.join(spelling.by_value)} here, got {value!r}"
            )
        return [flag] if flag else []
    if spelling.ours is None:
        return []
    if spelling.ours == "":
        return [value]
    return [spelling.ours, value] if spelling.takes_value else [spelling.ours]


def spellings_epilog(spec: CommandSpec) -> str:
    """The ``--help`` lines that say which reference spellings a command reads."""
    if not spec.spellings:
        return ""
    lines = "\n".join(f"  {sp.describe()}" for sp in spec.spellings)
    return (
        "also read as the reference tool spells them (and every --option_name\n"
        f"as --option-name):\n{lines}\n"
    )


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args`` with reference spellings read and negative
    option values attached (see above). Unrecognized arguments exit with the
    command's ``CommandSpec.refused_exit`` (sysbench's 1 for cpu and mem)."""
    warned: list[Spelling] = []
    line = attach_negative_values(parser, read_spellings(parser, argv, warned))
    namespace, extras = parser.parse_known_args(line)
    namespace.tool_warnings = tuple(ToolWarning(sp.warning(), sp.warns_on_stderr) for sp in warned)
    if extras:
        sub = _subparsers(parser).get(getattr(namespace, "command", None) or "")
        if isinstance(parser, Parser):
            parser.refused_exit = getattr(sub, "refused_exit", 2)
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return namespace


def make_plan(namespace: argparse.Namespace, argv: Sequence[str] = ()) -> RunPlan[Any]:
    """Read the parsed command line once into a frozen, validated plan.

    Raises the command's ``ProbeError`` (exit 2) for values its settings refuse."""
    values = dict(vars(namespace))
    name = values.pop("command", None)
    tool_warnings = tuple(values.pop("tool_warnings", ()))
    hints = old_interval_spelling(name, values)
    common = CommonOptions.from_values(values, tuple(argv))
    refuse_ignored(name, values)
    named_nothing = not common.detach and common.remote is None and common.wants_headless
    module = commands.load(name) if name is not None else None
    # fio's --name=JOB (a pasted fio line) names the job of a headless disk run
    if common.name is not None and named_nothing and not getattr(module, "NAMES_JOB", False):
        raise UsageProbeError(
            "--name names a session: use it with --detach (or --remote), or in the "
            "dashboard, where d detaches the run under that name; a headless run has none"
        )
    if common.assertions:  # --assert: known metric, fitting unit (exit 2 otherwise)
        from probetop.tui.analysis.assertions import resolve

        resolve(common.assertions, name)
    if name is None:
        return RunPlan(None, common, NoSettings(), hints=hints)
    assert module is not None
    settings = module.settings(values, common)
    return RunPlan(name, common, settings, hints=hints, tool_warnings=tool_warnings)


def old_interval_spelling(command: str | None, values: dict[str, Any]) -> tuple[str, ...]:
    """The common ``--interval`` (before 2026-11 the sampling period) read as
    ``--sample-interval``, with a one-line hint; UsageProbeError (exit 2)
    where it would be ambiguous: before ``icmp``, whose ``-i/--interval`` is
    ping's send interval, or beside ``--sample-interval``."""
    old = values.pop(OLD_INTERVAL, None)
    if old is None:
        return ()
    if command == "icmp":
        raise UsageProbeError(
            f"--interval before icmp is ambiguous: write --sample-interval {old:g} for the "
            f"sampling period, or `icmp HOST -i {old:g}` for ping's send interval"
        )
    if values.get("interval") is not None:
        raise UsageProbeError(
            "--interval is the old spelling of --sample-interval: give --sample-interval only"
        )
    values["interval"] = old
    return (
        f"--interval is now --sample-interval (the sampling period); "
        f"read as --sample-interval {old:g}",
    )


LIVE_RUN_OPTIONS = (
    ("record", "--record"),
    ("time", "--time"),
    ("interval", "--sample-interval"),
    ("metrics", "--metrics"),
    ("metrics_linger", "--metrics-linger"),
    ("textfile", "--textfile"),
    ("name", "--name"),
    ("with_system", "--with-system"),
)
"""Common options that only a run of probes reads (dest, flag); the old
``--interval`` is read as ``--sample-interval`` before this check."""


NO_DASHBOARD = ("report", "compare", "export", "ls", "stop", "rm", "follow", "compile")
"""Commands that never draw a dashboard: --theme has nothing to theme there
(said, as a headless run says it, not silently taken)."""


def refuse_ignored(command: str | None, values: dict[str, Any]) -> None:
    """UsageProbeError (exit 2) when a command that runs no probes (replay,
    report, compare, export, ls, attach, stop) is given an option only a live
    run reads: the CLI says what it would ignore (`compare A B --record C`
    recorded nothing; `export --metrics` served nothing)."""
    if command is None or command in commands.PROBE_COMMANDS or command == "demo":
        return
    if command in NO_DASHBOARD and values.get("theme"):
        raise UsageProbeError(
            f"{command} shows no dashboard, so --theme would be ignored; it applies to the "
            "probe commands, demo, replay and attach"
        )
    given = [flag for dest, flag in LIVE_RUN_OPTIONS if values.get(dest) not in (None, False)]
    if given:
        raise UsageProbeError(
            f"{command} runs no probes, so {', '.join(given)} would be ignored; "
            f"{'they apply' if len(given) > 1 else 'it applies'} to probe commands and demo"
        )


def command_module(plan: RunPlan[Any]) -> commands.Command | None:
    """The command that runs ``plan`` (None for the passive dashboard)."""
    return commands.load(plan.command) if plan.command else None


def deadline_s(plan: RunPlan[Any], module: commands.Command | None) -> float | None:
    """When the generic runner stops the probes: --time, unless the command's
    probes end themselves (``module.deadline_s``)."""
    own = getattr(module, "deadline_s", None)
    return own(plan) if own is not None else plan.common.time_limit_s


def command_help(line: str) -> str | None:
    """What the add-probe prompt shows under the line typed so far: the probe
    command's one-line help and its options, read from its spec; None until
    the first word names a probe command."""
    word = line.strip().split(" ", 1)[0]
    if word not in commands.PROBE_COMMANDS:
        return None
    module = commands.load(word)
    if module is None:
        return None
    spec: CommandSpec = module.SPEC
    return "\n".join([f"{spec.name}: {spec.help}", *spec.usage_lines()])


def parse_command_line(line: str) -> tuple[commands.Command, RunPlan[Any]]:
    """Parse a probe command typed into the dashboard (``cpu --threads 1``)
    with the CLI's own parser; raise CommandLineError instead of exiting."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise CommandLineError(str(exc)) from None
    if not argv:
        raise CommandLineError("type a probe command, e.g. cpu --threads 1")
    if argv[0] not in commands.PROBE_COMMANDS:
        raise CommandLineError(
            f"{argv[0]!r} is not a probe command; start with one of: "
            + ", ".join(n for n, _m in commands.available() if n in commands.PROBE_COMMANDS)
        )
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            namespace = parse_args(build_parser(), argv)
    except SystemExit:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        raise CommandLineError(lines[-1] if lines else f"cannot parse {line!r}") from None
    refuse_session_options(vars(namespace))
    plan = make_plan(namespace, ["probetop", *argv])
    module = command_module(plan)
    assert module is not None
    return module, plan


SESSION_OPTIONS = (
    ("record", "--record"),
    ("headless", "--headless"),
    ("json", "--json"),
    ("theme", "--theme"),
    ("assertions", "--assert"),
    ("metrics", "--metrics"),
    ("metrics_linger", "--metrics-linger"),
    ("textfile", "--textfile"),
    ("detach", "--detach"),
    ("name", "--name"),
    ("remote", "--remote"),
)
"""Common options that set up a whole run (dest, flag): a probe added to a
running dashboard joins that run and has none of its own."""


def refuse_session_options(values: dict[str, Any]) -> None:
    """CommandLineError when a line typed into the add-probe prompt sets up a
    whole run: said, not silently dropped (`cpu --record x.jsonl` added a
    probe and recorded nothing)."""
    given = [flag for dest, flag in SESSION_OPTIONS if values.get(dest) not in (None, False, [])]
    if given:
        raise CommandLineError(
            f"{', '.join(given)} would be ignored here: "
            f"{'they set' if len(given) > 1 else 'it sets'} up a whole run, on probetop's own "
            "command line; in the dashboard r records and d detaches"
        )
