"""The command-line options every sysbench test takes, with one meaning in
every probetop command that follows sysbench.

Contract:
- ``threads_option()``, ``time_option()``, ``events_option(help)``,
  ``report_interval_option(command)``, ``percentile_option()``,
  ``forced_shutdown_option()`` and ``run_word_option(test)`` are the
  ``Option`` entries a family's ``CommandSpec`` lists (sysbench's names and
  defaults). Every sysbench INT option reads its value with ``int_value(name)``
  (``seconds_value(name)`` for --time and --report-interval, which take
  probetop's durations too): one rule, sysbench's (a whole number in an
  int, an empty value 0, else ``Invalid value for the 'NAME' option``).
- ``sampling_period(values, interval_s=..., interval_given=..., command=...)``
  reconciles --report-interval (sysbench's name for the sampling period,
  which also prints the ``[ Ns ]`` lines) with probetop's --sample-interval:
  (the period, whether the lines are asked for); 0 is sysbench's "off", as
  not given; UsageProbeError when both are given and differ, never a silent
  override.
- ``old_spellings(test, events=...)``: sysbench 0.4/0.5's option names
  (``--num-threads``, ``--max-time``, ``--test=cpu``) for a spec's
  ``spellings``.
- ``histogram_option()``: sysbench's ``--histogram[=on|off]`` (a flag here;
  ``old_spellings`` reads sysbench's ``=on|off`` values as it): the text
  report prints the latency histogram as sysbench does; ``on_off_spelling(flag)``
  reads sysbench's ``FLAG=on|off`` of any such flag (``--memory-hugetlb``).
- ``rand_seed_option()`` and ``seed_line(seed)``: sysbench's --rand-seed and
  the head line that names it; ``rand_type_option()``: sysbench's --rand-type
  (checked as sysbench checks it; nothing here draws from it) and
  ``rand_spec_options()``, its distributions' parameters (the same);
  ``size_value(name)`` reads a SIZE option (``4k``, ``1G``) and refuses what
  sysbench would silently read as 0 (``1.5G``, ``abc``); ``verbosity_option()`` and
  ``check_verbosity(level)``: sysbench's --verbosity (below 3: no text report).
- ``check_percentile(p, histogram=...)`` refuses what sysbench would (0
  disables it; ``--histogram`` with 0 is ``HISTOGRAM_WITHOUT_PERCENTILE``).
- ``old_spellings`` checks --num-threads/--max-requests/--max-time as INTs
  in their own names, and --thread-stack-size as sysbench does, before
  ignoring it; ``check_forced_shutdown(value, time_s)`` is sysbench's check
  of --forced-shutdown (made only with a --time).
- ``settings_reader(Settings.from_options)``: a family's ``read_settings``
  hook (--forced-shutdown checked first), the common --time and
  --sample-interval passed on; a value the
  settings refuse exits ``REFUSED_EXIT`` (sysbench's 1), a limit of this
  machine (``LimitProbeError``) 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.family import RunCommon
from probetop.probes.core.options import (
    DURATION_SPELLINGS,
    Option,
    OptionValueError,
    Spelling,
    duration,
)
from probetop.probes.core.ranges import LimitProbeError

DEFAULT_TIME_S = 10.0  # sysbench 1.0's --time default
# sysbench 1.0.20 exits 1 for a value it refuses ("Invalid value for the
# 'threads' option"), an unknown option, or a command its test lacks: a
# sysbench family's CommandSpec.refused_exit and its settings' refusals.
REFUSED_EXIT = 1
DEFAULT_PERCENTILE = 95.0


def threads_option() -> Option:
    return Option(("--threads",), "worker threads (default 1)", int_value("threads"), 1, "N")


def time_option() -> Option:
    """sysbench's --time, a sysbench family's own (the common --time's place):
    sysbench's INT (an empty value is 0, no time limit; beyond an int
    refused in its words) and probetop's durations (1.5, 500ms, 2m) besides."""
    return Option(
        ("--time",),
        "stop after S seconds (default 10, as sysbench; 0: no time limit; or 500ms, 10m, 2h)",
        seconds_value("time"),
        None,
        "S",
    )


def events_option(help: str) -> Option:
    return Option(("--events",), help, int_value("events"), 0, "N")


def report_interval_option(command: str) -> Option:
    return Option(
        ("--report-interval",),
        "sample every S seconds and print sysbench's [ Ns ] lines in the headless "
        f"report (per-interval, not cumulative); {command}'s name for --sample-interval",
        seconds_value("report_interval"),
        None,
        "S",
    )


def percentile_option() -> Option:
    return Option(
        ("--percentile",),
        "latency percentile to report, a whole number (default 95; 0 disables, as in sysbench)",
        int_value("percentile"),
        DEFAULT_PERCENTILE,
        "P",
    )


def histogram_option() -> Option:
    return Option(
        ("--histogram",),
        "print sysbench's latency histogram in the headless text report "
        "(sysbench's --histogram[=on|off]; default off)",
        action="store_true",
        default=False,
    )


def rand_seed_option() -> Option:
    return Option(
        ("--rand-seed",),
        "sysbench's random generator seed (default 0: the current time); printed in "
        "the report's head as sysbench prints it. cpu draws no random numbers; mem's "
        "rnd mode uses its own generator (not sysbench's: the same seed does not give "
        "sysbench's addresses)",
        int_value("rand_seed"),
        0,
        "N",
    )


#: sysbench 1.0.20's --rand-type values (sb_rand.c, sb_rand_init); "special" by default.
RAND_TYPES = ("uniform", "gaussian", "special", "pareto")


def _rand_type(text: str) -> str:
    if text not in RAND_TYPES:  # sysbench's words, case-sensitive as its strcmp
        raise OptionValueError(f"Invalid random numbers distribution: {text}.")
    return text


def rand_type_option() -> Option:
    return Option(
        ("--rand-type",),
        "sysbench's distribution of its random numbers: uniform, gaussian, special "
        "(default) or pareto; another value exits 1 as sysbench. It changes nothing "
        "here, as in sysbench 1.0.20: cpu draws no random numbers and memory's rnd "
        "mode always draws uniform offsets (sb_rand_uniform_double)",
        _rand_type,
        "special",
        "TYPE",
    )


def _checkpoints(text: str) -> str:
    """sysbench 1.0.20's check of --report-checkpoints (whole seconds, 0..INT_MAX,
    comma-separated; "Invalid value for --report-checkpoints: 'x'"), then the
    refusal: the checkpoint reports are not printed by probetop yet."""
    for item in text.split(","):
        if not item:
            continue
        if not item.strip().lstrip("+-").isdigit() or not 0 <= int(item) <= 2**31 - 1:
            raise OptionValueError(f"Invalid value for --report-checkpoints: '{item}'")
    raise OptionValueError(
        "not supported yet: sysbench's checkpoint reports (a full report at each "
        "listed second, counters reset) are not printed by probetop; use "
        "--report-interval S for per-interval lines, or --json"
    )


def report_checkpoints_option() -> Option:
    return Option(
        ("--report-checkpoints",),
        "sysbench's full reports at the listed seconds: not supported yet (exit 1)",
        _checkpoints,
        None,
        "LIST",
        hidden=True,
    )


DEFAULT_VERBOSITY = 3  # sysbench's LOG_NOTICE: the report


def verbosity_option() -> Option:
    return Option(
        ("--verbosity",),
        "sysbench's log level, 0..5 (default 3): below 3 the headless text report is "
        "not printed, as sysbench prints none (--json is unaffected); 4 adds sysbench's "
        "progress lines (the limit reached, Done.); 5 adds its DEBUG lines (each worker "
        "thread started and initialized, the reporting thread started)",
        int_value("verbosity"),
        DEFAULT_VERBOSITY,
        "N",
    )


DEBUG_VERBOSITY = 5  # sysbench's LOG_DEBUG


def head_flag_options() -> tuple[Option, ...]:
    """sysbench's --debug and --validate (``[=on|off]``): each prints its
    line in the report's head, as sysbench does ("Debug mode enabled.",
    "Validation checks: on."), and changes no number. --debug also sets
    --verbosity 5, as sysbench's (``effective_verbosity``); cpu and memory
    have no checks for --validate to run in sysbench 1.0.20."""
    return (
        Option(
            ("--debug",),
            "sysbench's --debug[=on|off]: prints 'Debug mode enabled.' in the head and "
            "sets --verbosity 5 (its DEBUG lines), as sysbench; changes no number "
            "(sysbench's per-thread DEBUG statistics are not printed)",
            action="store_true",
            default=False,
        ),
        Option(
            ("--validate",),
            "sysbench's --validate[=on|off]: prints 'Validation checks: on.' in the head, "
            "as sysbench; cpu and memory have no checks to run in sysbench 1.0.20",
            action="store_true",
            default=False,
        ),
    )


def effective_verbosity(values: Mapping[str, Any]) -> int:
    """--verbosity as sysbench runs with it: checked as given, then 5 with
    --debug (sysbench 1.0.20's init() sets it after the options are read,
    so --debug wins over any --verbosity)."""
    level = values.get("verbosity", DEFAULT_VERBOSITY)
    check_verbosity(level)
    return DEBUG_VERBOSITY if values.get("debug") else level


ENDLESS_WARNING = "WARNING: Both event and time limits are disabled, running an endless test"


def endless_warning(time_s: float, events: int) -> list[str]:
    """sysbench's warning when neither --time nor --events limits a run
    (its init(): both 0), its first line on stdout (before the banner), at
    every --verbosity: sysbench logs it before it reads its log level.
    memory's test ignores --events, but the warning reads it all the same."""
    return [ENDLESS_WARNING] if not time_s and not events else []


def check_verbosity(level: int) -> None:
    """sysbench's range (0..5, "Invalid value for verbosity")."""
    if not 0 <= level <= 5:
        raise UsageProbeError(f"--verbosity must be within 0..5 (as in sysbench), got {level}")


def seed_line(seed: int) -> str:
    """sysbench's line on its generator's seed (sb_rand_init)."""
    if seed:
        return f"Initializing random number generator from seed ({seed})."
    return "Initializing random number generator from current time"


# sysbench's boolean values (sb_options.c): anything else is "invalid option".
_ON, _OFF = ("on", "true", "1"), ("off", "false", "0")


def forced_shutdown_option() -> Option:
    return Option(
        ("--forced-shutdown",),
        "sysbench's seconds (or N%% of --time, or off) to wait after --time before "
        "it forces a stop: checked as sysbench checks it, then ignored (probetop's "
        "workers end at --time; a stop that hangs is an error of its own)",
        None,
        None,
        "V",
    )


def check_forced_shutdown(text: str | None, time_s: float) -> None:
    """sysbench 1.0.20's check of --forced-shutdown (init() in sysbench.c),
    made only when a --time limits the run, as there: ``off`` (any case), or
    strtol's whole number followed by nothing or by ``%`` (whatever comes
    after it); an empty value is not given. Anything else is its FATAL
    (UsageProbeError, exit 1)."""
    import re

    if not text or not time_s or text.lower() == "off":
        return
    number = re.match(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text, re.ASCII)
    rest = text[number.end() :] if number else text  # strtol's endptr
    if rest and not rest.startswith("%"):
        raise UsageProbeError(f"FATAL: Invalid value for --forced-shutdown: '{text}'")


def _sysbench_size(text: str) -> int:
    """A SIZE as sysbench 1.0.20 reads it (sb_get_value_size): leading
    digits (an unsigned 64-bit number that wraps), then an optional unit
    k/m/g/t in any case (what follows it is not read); another character
    after the digits, or none at all, is 0."""
    value, digits = 0, 0
    for ch in text:
        if not "0" <= ch <= "9":
            if not digits:
                return 0
            shift = {"k": 10, "m": 20, "g": 30, "t": 40}.get(ch.lower())
            return 0 if shift is None else (value << shift) % 2**64
        value, digits = (value * 10 + ord(ch) - ord("0")) % 2**64, digits + 1
    return value


def _thread_stack_size(text: str) -> str:
    """sysbench 1.0.20's check of --thread-stack-size: the size, kept in a
    C int, must be above 0 (so 4G, 2G, 1.5K, 8b, abc and empty are refused,
    its FATAL naming the int: ``Invalid value for thread-stack-size: 0.``)."""
    low = _sysbench_size(text) & 0xFFFFFFFF
    as_int = low - 2**32 if low > INT_MAX else low
    if as_int <= 0:
        raise OptionValueError(f"FATAL: Invalid value for thread-stack-size: {as_int}.")
    return text


# sysbench's general options that cannot change what cpu or memory measures:
# their values checked as sysbench checks them, then ignored, each with the
# reason --help gives.
# (--forced-shutdown is an option: sysbench checks it only with a --time.)
_IGNORED_VALUES: dict[str, tuple[Callable[[str], str], str]] = {
    "--thread-stack-size": (
        _thread_stack_size,
        "probetop's workers run on their own stacks; the events use a few hundred bytes of them",
    ),
}


def on_off_spelling(flag: str) -> Spelling:
    """sysbench's ``FLAG=on|off`` (and true/false, 1/0) of a boolean option
    that is a plain flag here: on is the flag, off is nothing."""
    return Spelling(
        "sysbench", flag, None, by_value={**dict.fromkeys(_ON, flag), **dict.fromkeys(_OFF, "")}
    )


def old_spellings(test: str, *, events: bool) -> tuple[Spelling, ...]:
    """sysbench's spellings: ``--histogram=on|off`` (read as the flag or
    nothing), and sysbench 0.4/0.5's names, which sysbench 1.0 still reads
    (deprecated): ``sysbench --test=cpu --num-threads=2 --max-time=10 run``
    runs as is."""
    # sysbench 1.0.20's rule for its deprecated names: one set to other than
    # its default wins over the new name and prints a WARNING line on stdout
    # (in this order: num-threads, max-requests, max-time); at the default it
    # is ignored.
    # Each is checked as sysbench checks it, in its own name ('max_requests').
    deprecated = (
        Spelling(
            "sysbench",
            "--num-threads",
            "--threads",
            deprecated_default="1",
            parse=int_value("num_threads"),
        ),
        *(
            (
                Spelling(
                    "sysbench",
                    "--max-requests",
                    "--events",
                    deprecated_default="0",
                    parse=int_value("max_requests"),
                ),
            )
            if events
            else ()
        ),
        Spelling(
            "sysbench",
            "--max-time",
            "--time",
            deprecated_default="0",
            parse=seconds_value("max_time"),
        ),
    )
    out = (
        on_off_spelling("--histogram"),
        Spelling(
            "sysbench",
            "--test",
            None,
            by_value={test: ""},
            note="this command",
            warns="WARNING: the --test option is deprecated. You can pass a script name or "
            "path on the command line without any options.",
            warns_on_stderr=True,
        ),
        *deprecated,
    )
    flags = (on_off_spelling("--debug"), on_off_spelling("--validate"))  # head_flag_options
    ignored = tuple(
        Spelling("sysbench", flag, None, note=why, parse=check)
        for flag, (check, why) in _IGNORED_VALUES.items()
    )
    return (*out, *flags, *ignored)


def run_word_option(test: str) -> Option:
    """sysbench's trailing command word, so a ``sysbench TEST ... run`` line works as is."""
    return Option(
        ("sysbench_command",),
        f"sysbench's command word: a line ending in run runs headless, prints the "
        f"report and exits at --time, as `sysbench {test} ... run` (on a terminal too)",
        choices=("run",),
        nargs="?",
        metavar="run",
    )


def sysbench_forms(test: str, command: str) -> str:
    """The ``--help`` paragraph on the sysbench command lines ``command`` takes
    (tui/cli/sysbench_line.py rewrites them)."""
    alias = f"\n(`{test}` is sysbench's name of `probetop {command}`)" if test != command else ""
    return f"""\
sysbench's command lines run as they are: `sysbench [options]... {test} run`
becomes `probetop [options]... {test} run`{alias}.
Accepted: options before or after the test name; --test={test} instead of
the name (sysbench 0.4); --config-file=FILE, sysbench's general options
(threads, time, events, report-interval, percentile, histogram, rand-seed,
rand-type, verbosity, ...) one NAME=VALUE a line, read where it stands (a
test's own options are not read from it, as in sysbench); the command word
last: run (headless: the report is printed and the run ends at --time, on
a terminal too; without it the dashboard opens on a terminal), help (this help), prepare and cleanup
(refused with exit 1, as sysbench: the {test} test has neither); a word
after it exits 1 (sysbench's "Unrecognized command line argument"). A
refused value or an unknown option exits 1, as in sysbench: an INT option's
value must be a whole number that fits in an int (an empty one is 0), in
sysbench's words (a limit of this machine, such as too many threads, exits 2).
"""


def sampling_period(
    values: Mapping[str, Any], *, interval_s: float, interval_given: bool, command: str
) -> tuple[float, bool]:
    """(sampling period in s, whether sysbench's [ Ns ] lines are asked for)."""
    report_interval = values.get("report_interval")
    if report_interval is None or report_interval == 0:
        # 0 is sysbench's own "no intermediate reports" (its help says so), as not given
        return float(interval_s), False
    if report_interval <= 0:
        raise UsageProbeError(f"--report-interval must be positive, got {report_interval}")
    if interval_given and report_interval != interval_s:
        raise UsageProbeError(
            f"--report-interval {report_interval:g} and --sample-interval {interval_s:g} "
            f"name the same period in {command} (sysbench's name and probetop's): give one"
        )
    return float(report_interval), True


HISTOGRAM_WITHOUT_PERCENTILE = "FATAL: --histogram cannot be used with --percentile=0"
"""sysbench 1.0.20's refusal of --histogram with --percentile=0 (exit 1)."""


def check_percentile(pct: float, *, histogram: bool = False) -> None:
    """Refuse a percentile outside 0..100, and ``--histogram`` with
    ``--percentile=0`` in sysbench 1.0.20's words (it exits 1 before the
    run: with the percentile off no event is filed, so there is no
    histogram to print)."""
    if not (0 <= pct <= 100):
        raise UsageProbeError(f"--percentile must be within 1..100 (0: disabled), got {pct:g}")
    if histogram and pct == 0:
        raise UsageProbeError(HISTOGRAM_WITHOUT_PERCENTILE)


SettingsT_co = TypeVar("SettingsT_co", covariant=True)


class FromOptions(Protocol[SettingsT_co]):
    """A sysbench family's ``Settings.from_options``."""

    def __call__(
        self,
        values: Mapping[str, Any],
        *,
        time_s: float | None,
        interval_s: float,
        interval_given: bool = ...,
    ) -> SettingsT_co: ...


def settings_reader(
    from_options: FromOptions[SettingsT_co],
) -> Callable[[Mapping[str, Any], RunCommon], SettingsT_co]:
    """A sysbench family's ``read_settings`` hook (``Family.read_settings``):
    ``from_options`` with the common --time and --sample-interval, and whether
    --sample-interval was on the command line (``sampling_period`` refuses it
    beside a different --report-interval)."""

    def read_settings(values: Mapping[str, Any], common: RunCommon) -> SettingsT_co:
        try:
            time_s = DEFAULT_TIME_S if common.time_s is None else common.time_s
            check_forced_shutdown(values.get("forced_shutdown"), time_s)
            return from_options(
                values,
                time_s=common.time_s,
                interval_s=common.interval_s,
                interval_given=values.get("interval") is not None,
            )
        except LimitProbeError:
            raise  # beyond what this machine holds, not a bad value: exit 2
        except UsageProbeError as exc:
            exc.exit_code = REFUSED_EXIT  # sysbench's status for a value it refuses
            raise

    return read_settings


INT_MAX = 2**31 - 1  # sysbench reads an INT option into a C int


def _int_text(text: str) -> bool:
    """A whole number as strtol reads one with nothing after it: leading
    blanks, a sign, ASCII digits."""
    import re

    return re.fullmatch(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text, re.ASCII) is not None


def _invalid(name: str, text: str, why: str = "") -> OptionValueError:
    """sysbench's words for an INT value it refuses (exit 1)."""
    return OptionValueError(f"Invalid value for the '{name}' option: '{text}'{why}")


def int_value(name: str) -> Callable[[str], int]:
    """sysbench 1.0.20's check of an INT option, one rule for all of them
    (--threads, --events, --percentile, --rand-seed, --verbosity, --rate,
    --rand-spec-*, --cpu-max-prime, the old --num-threads and
    --max-requests; --time and --report-interval in ``seconds_value``): an
    empty value is 0, as sysbench reads it; else a whole number (strtol's:
    leading blanks, a sign, ASCII digits, nothing after) that fits in an
    int; anything else gets sysbench's words, ``Invalid value for the 'NAME'
    option: 'TEXT'`` (exit 1). What the value means (0: no limit, off) and
    its range are the settings' to check."""

    def parse(text: str) -> int:
        if text == "":
            return 0  # sysbench reads an empty INT value as 0
        if not _int_text(text) or not -INT_MAX - 1 <= int(text) <= INT_MAX:
            raise _invalid(name, text)
        return int(text)

    return parse


def seconds_value(name: str) -> Callable[[str], float]:
    """sysbench's INT check (``int_value``) of a number of seconds (--time,
    --report-interval, the old --max-time), and probetop's durations besides
    (``1.5``, ``500ms``, ``2m``), read where the text is no whole number; a
    duration must fit in sysbench's int too. Never negative: sysbench runs
    a negative --time without end and a negative --report-interval as off;
    both are refused here (docs/cpu.md)."""
    whole = int_value(name)
    read_duration = duration()

    def parse(text: str) -> float:
        if text == "" or _int_text(text):
            value = float(whole(text))
        else:
            try:
                value = read_duration(text)
            except OptionValueError:
                raise _invalid(name, text, f" (a whole number, or {DURATION_SPELLINGS})") from None
            if value > INT_MAX:
                raise _invalid(name, text)
        if value < 0:
            raise OptionValueError(f"must be zero or a positive number, got {text.strip()}")
        return value

    return parse


rate_value = int_value("rate")


def size_value(name: str, *, sysbench_reads: str) -> Callable[[str], int]:
    """A sysbench SIZE option (``--memory-total-size``): digits and an
    optional unit (k, M, G, T, P: powers of 1024, any case, ``iB``/``B``
    after it as sysbench ignores them). sysbench stops reading at the first
    character that is not a digit or a unit, so it takes ``1.5G`` as 0
    without a word; a fraction is refused here, saying what sysbench makes of
    it (``sysbench_reads``) and the whole number to write (``1536M``).
    A negative value or text that is no size is refused as everywhere."""
    from probetop.probes.core.options import parse_byte_size

    def parse(text: str) -> int:
        value = parse_byte_size(text)
        if "." in text:
            raise OptionValueError(
                f"not a whole number: {text!r} ({sysbench_reads}); write {_whole_spelling(value)}"
            )
        return value

    return parse


def _whole_spelling(value: int) -> str:
    """``value`` bytes in the largest unit that divides it: 1536M, 3k, 700."""
    for unit, shift in (("P", 50), ("T", 40), ("G", 30), ("M", 20), ("k", 10)):
        if value and value % (1 << shift) == 0:
            return f"{value >> shift}{unit}"
    return str(value)


# sysbench's parameters of its --rand-type distributions, with its defaults:
# read and checked as sysbench reads them, and they change nothing here, as
# --rand-type changes nothing (see rand_type_option).
_RAND_SPEC = (
    ("--rand-spec-iter", "rand_spec_iter", 12, "number of iterations used for numbers generation"),
    ("--rand-spec-pct", "rand_spec_pct", 1, "percentage of values treated as 'special'"),
    ("--rand-spec-res", "rand_spec_res", 75, "percentage of 'special' values to use"),
)


def rand_spec_options() -> tuple[Option, ...]:
    """sysbench's --rand-spec-iter/-pct/-res (INT) and --rand-pareto-h (a
    DOUBLE sysbench reads with atof: any text): accepted, so a sysbench line
    with them runs; they shape --rand-type's distributions only."""
    ints = tuple(
        Option(
            (flag,),
            f"sysbench's {help} (for --rand-type special; default {default}); "
            "changes nothing here, as --rand-type",
            int_value(name),
            default,
            "N",
        )
        for flag, name, default, help in _RAND_SPEC
    )
    pareto = Option(
        ("--rand-pareto-h",),
        "sysbench's h of the pareto distribution (default 0.2); changes nothing "
        "here, as --rand-type",
        None,
        "0.2",
        "N",
    )
    return (*ints, pareto)


def rate_option() -> Option:
    return Option(
        ("--rate", "--tx-rate"),
        "sysbench's --rate: events arrive at random (a Poisson process) at N per "
        "second on average and wait in a queue for a free thread; latency counts "
        "from the arrival, so queueing shows in it. Intermediate lines add sysbench's "
        "'queue length: Q concurrency: C'; more than 131072 events waiting ends the "
        "run as sysbench's ('The event queue is full', exit 1). Default 0: "
        "unlimited, events back to back (--tx-rate is sysbench's old name)",
        rate_value,
        0,
        "N",
        dest="rate",
    )


def check_rate(rate: int) -> None:
    """0 (unlimited) or more: sysbench reads a negative --rate as a huge
    unsigned rate whose queue fills at once (FATAL, exit 1)."""
    if rate < 0:
        raise UsageProbeError(
            f"--rate must be 0 (unlimited) or more, got {rate} (sysbench 1.0.20 runs "
            "it as a rate of 2^32 - N per second and stops at once: The event queue is full)"
        )
