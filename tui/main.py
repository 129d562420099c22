"""The ``probetop`` console script: parse, plan, then run headless or show the
dashboard.

This is the one module above both the CLI layer and the UI: it is where the
decision "is a screen shown" is made, so the CLI never imports the UI and
the UI never imports this. Textual is imported only when a screen is shown;
``probetop --version`` and headless runs never load it.

Command module hooks it drives (see ``tui/commands/__init__.py``):
``run(plan)`` may finish the command (an exit code) or hand over a dashboard
(an ``AppConfig``); ``open_probes(plan)`` / ``build_probes(plan)`` give the
probes; ``join_probes(plan, stack)`` gives makers of them, each run in a
thread of its own after the dashboard's first frame (``demo``); a
``ConfirmationRequired`` from them is answered here, once, for every command
that can destroy data.
"""

from __future__ import annotations

# ruff: noqa: E402 (the stop-signal handler goes in before the other imports)
# Before anything heavy loads: a stop signal during start-up is never lost
# (an inherited SIG_IGN, as `probetop ... &` in a script leaves SIGINT, lost it).
from probetop.probes.core import stopsignals

stopsignals.install()

import asyncio
import contextlib
import dataclasses
import gc
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import ConfirmationRequired, ProbeError
from probetop.probes.record import (
    RECORDING_INCOMPLETE_EXIT,
    RecordingError,
    hide_cmdline_secrets,
    set_body_key_loader,
)
from probetop.probes.system import passive_probes
from probetop.tui import commands
from probetop.tui.analysis.assertions import RunAssertions, exit_status, print_outcomes
from probetop.tui.cli.parser import (
    build_parser,
    command_module,
    commands_needed,
    make_plan,
    parse_args,
)
from probetop.tui.cli.plan import RunPlan
from probetop.tui.cli.sysbench_line import sysbench_argv, sysbench_version
from probetop.tui.run.hardexit import exit_now, flush_output
from probetop.tui.run.importgc import collect_from_now, imports_without_gc
from probetop.tui.run.launch import (
    dashboard_config,
    fail,
    output_failed,
    recording_status,
    run_headless_plan,
)
from probetop.tui.run.runner import RunResult, generic_report
from probetop.tui.run.viewconfig import (
    AppConfig,
    AttachView,
    Detachable,
    JoinOutcome,
    LiveView,
    ReplayView,
)

Foreground = tuple["ForegroundLink | None", str | None]
"""``start_waiter()``'s answer: (the link to the waiter or None, why not)."""
from probetop.tui.sessions.registry import SessionError, body_key
from probetop.tui.sessions.secretargs import ARGV_STDIN, read_argv_stdin

if TYPE_CHECKING:
    from probetop.tui.sessions.foreground import ForegroundLink


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``probetop`` console script."""
    if stopsignals.pending():  # a signal during the imports: nothing started yet
        return stopsignals.exit_status()
    stopsignals.interrupt_from_now()
    if argv is None:
        hide_cmdline_secrets()  # ps shows every user the command line: before any fork
        global _console_script
        _console_script = True  # it ends through exit_now: its last words reach a waiter
    set_body_key_loader(body_key)  # bodies' hashes keyed by the per-install secret
    try:
        if argv is None and sys.argv[1:2] == [ARGV_STDIN]:  # --remote: options over ssh's stdin
            sys.argv = [sys.argv[0], *read_argv_stdin()]
        given = sys.argv[1:] if argv is None else list(argv)
        said = sysbench_version(given)  # `sysbench cpu --version`
        if said is not None:
            print(said)
            return 0
        args = sysbench_argv(given)  # sysbench's `[options]... cpu run` as probetop's
        parser = build_parser(commands_needed(args))
        namespace = parse_args(parser, args)
        # The plan keeps the line as given (a --remote or --detach session re-reads it).
        plan = make_plan(namespace, sys.argv if argv is None else ["probetop", *given])
        for hint in plan.hints:  # an old spelling, read as the new one
            print(f"probetop: hint: {hint}", file=sys.stderr)
        for warning in plan.tool_warnings:  # stdout's go before the text report
            if warning.on_stderr or plan.common.json:  # --json: stdout is one document
                print(warning.line, file=sys.stderr)
        code = run_plan(plan)
        # The report is written only once flushed: a stdout that is a file
        # or pipe is block-buffered (no PYTHONUNBUFFERED), and exit_now
        # ignores a failed flush, so a full disk would pass as exit 0.
        sys.stdout.flush()
        return code
    except (ProbeError, RecordingError, SessionError) as exc:
        return fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return stopsignals.exit_status()
    except BrokenPipeError:
        # `probetop report x | head`: the reader left; stay quiet like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        code = output_failed(exc)
        if code is None:
            raise
        return code
    except Exception:
        if stopsignals.pending() is not None:
            # A stop signal raised KeyboardInterrupt inside a library that
            # could not unwind (numba's compiler, mid-JIT) and it failed
            # later with an error of its own: the user asked to stop, and
            # nothing had started (start-up is where that happens).
            return stopsignals.exit_status()
        raise


def run_plan(plan: RunPlan[Any]) -> int:
    """Run one plan to its exit code."""
    if plan.common.remote is not None:  # --remote HOST: probes there, panes here
        from probetop.tui.sessions.remote import run_remote_plan

        return run_remote_plan(plan, run_app)
    if plan.common.detach:  # --detach: the same plan, headless, in a background session
        from probetop.tui.sessions.daemon import detach

        return detach(plan, _run_in_session)
    fg = _split_for_detach(plan)
    module = command_module(plan)
    if fg is None and getattr(module, "BLOCKS_IN_KERNEL", False):
        _split_from_kernel_waits()
    if module is None:  # bare `probetop`: the passive panes
        probes = passive_probes(plan.common.interval_s)
        if plan.common.wants_headless:
            return run_headless_plan(plan, list(probes), None)
        config = dashboard_config(plan, list(probes), None, with_passive=False)
        return run_app(config, plan=plan, foreground=fg)
    run = getattr(module, "run", None)
    if run is not None:
        outcome = run(plan)
        if isinstance(outcome, (LiveView, ReplayView, AttachView)):
            return run_app(outcome)
        if outcome is not None:
            return int(outcome)
    headless_only = getattr(module, "headless_only", None)
    if headless_only is not None and headless_only(plan):
        return run_headless_plan(plan, list(module.build_probes(plan)), module)
    try:
        return _run_probes(plan, module, fg)
    except ConfirmationRequired as exc:
        if plan.common.wants_headless:
            raise
        if not ask_confirmation(exc):
            return fail(f"{exc.action} not confirmed: nothing was written", 1)
        return _run_probes(module.confirmed(plan), module, fg)


def _split_for_detach(plan: RunPlan[Any]) -> Foreground | None:
    """Before anything starts a thread (a demo's targets, --metrics, numba):
    split into waiter and dashboard when this plan may show a live dashboard
    that ``d`` can detach (tui.sessions.foreground). None when it cannot."""
    if plan.common.wants_headless or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None  # no terminal, no dashboard (a caller may have said otherwise)
    if plan.command is not None and plan.command not in (*commands.PROBE_COMMANDS, "demo"):
        return None
    from probetop.tui.sessions.foreground import start_waiter

    return start_waiter()  # the parent waits there for good; the child goes on


_console_script = False
"""True when ``main`` runs as the console script (a caller's own
process, a test calling ``main(argv)``, is never forked)."""


def _split_from_kernel_waits() -> None:
    """Before anything starts a thread: a run whose I/O threads a hung device
    can hold in the kernel goes on in a child, and the process the shell
    waits for exits with its status, report and footer written, even when
    the kernel keeps the child (tui.sessions.waiter). Nothing is split when
    a thread already runs (a detached session's control server: no shell
    waits for it)."""
    if not _console_script:
        return
    from probetop.probes.core import kernelholds
    from probetop.tui.sessions.waiter import split

    shell_pid = os.getpid()
    pipe_w, _why = split(dashboard=False)
    if pipe_w is not None:
        kernelholds.set_shown_pid(shell_pid)  # "in use by probetop PID N": the one started


def _run_in_session(plan: RunPlan[Any]) -> int:
    """A detached session's run: ``run_plan`` with ``main``'s error handling."""
    try:
        return run_plan(plan)
    except (ProbeError, RecordingError, SessionError) as exc:
        return fail(str(exc), exc.exit_code)
    except OSError as exc:  # its log on a full disk: `ls` shows finished (74)
        code = output_failed(exc)
        if code is None:
            raise
        return code


def _run_probes(plan: RunPlan[Any], module: commands.Command, fg: Foreground | None = None) -> int:
    if getattr(module, "join_probes", None) is not None and not plan.common.wants_headless:
        return _run_joining(plan, module, fg)
    opener = getattr(module, "open_probes", None)
    context = opener(plan) if opener is not None else contextlib.nullcontext(None)
    with context as opened:
        probes = list(opened) if opened is not None else list(module.build_probes(plan))
        if plan.common.wants_headless:
            if plan.common.with_system and getattr(module, "WITH_PASSIVE", True):
                # after the command's own probes: its report reads probes[0]
                have = {p.id for p in probes}
                probes += [p for p in passive_probes(plan.common.interval_s) if p.id not in have]
            return run_headless_plan(plan, probes, module)
        with_passive = getattr(module, "WITH_PASSIVE", True)
        config = dashboard_config(plan, probes, module, with_passive=with_passive)
        return run_app(config, plan=plan, module=module, foreground=fg)


Maker = Callable[[], tuple[list[Any], list[str]]]
"""One of ``join_probes``' makers: a group of probes and notes on any skipped."""


class _Joining:
    """``LiveView.joining`` for a command with ``join_probes``: the passive
    panes draw at once; the command's targets are made in a worker thread
    meanwhile (``__call__``), then each of its makers runs in a thread of
    its own and its probes, prepared there, join as soon as they are ready
    (a slow maker delays only its own panes). ``close`` (after the
    dashboard) leaves the targets; a maker still inside a JIT warm-up or
    a scratch file then leaves them itself as soon as the last one is out
    (nothing is left behind either way, and nothing is removed under a
    maker still writing). The cyclic collector is off from the start of the
    joining until the last maker is out (``importgc``: the makers' imports and
    native loads build ~10^5 lasting objects; their collections took ~0.2 s
    of the interpreter lock that every joining pane waits on)."""

    def __init__(self, plan: RunPlan[Any], module: commands.Command, have: set[str]) -> None:
        self._plan, self._module, self._have = plan, module, have
        self._stack = contextlib.ExitStack()
        # What the command starts at once, before Textual's import (the
        # demo's scratch files: I/O that needs no interpreter lock), handed
        # to ``join_probes``; closed with the targets, or here if it never ran.
        start_early = getattr(module, "start_early", None)
        self._early = start_early(plan) if start_early is not None else None
        if self._early is not None:
            self._stack.callback(self._early.close)
        self._lock = threading.Lock()
        self._closed = False
        self._busy = 1  # the targets being made, then each maker still running
        self._called = False  # whether the session began the joining (``__call__``)
        self._gc_paused = False

    def __call__(self, deliver: Callable[[JoinOutcome], None]) -> None:
        with self._lock:
            self._called = True
            self._gc_paused = gc.isenabled()
            gc.disable()
        stack = contextlib.ExitStack()
        try:
            early = {} if self._early is None else {"early": self._early}
            makers = list(self._module.join_probes(self._plan, stack, **early))
        except ProbeError as exc:
            stack.close()
            self._done()
            deliver(exc)
            return
        except BaseException:
            stack.close()
            self._done()
            raise
        with self._lock:
            self._stack.push(stack.pop_all())
            if self._closed:
                makers = []
            self._busy += len(makers)
        for maker in makers:
            threading.Thread(
                target=self._make, args=(maker, deliver), name="probes-joining", daemon=True
            ).start()
        self._done()

    def _make(self, maker: Maker, deliver: Callable[[JoinOutcome], None]) -> None:
        outcome: JoinOutcome
        try:
            probes, notes = maker()
            probes = [p for p in probes if p.id not in self._have]
            for probe in probes:
                probe.prepare()  # off the UI loop: the ICMP JIT warm-up takes ~1 s
            outcome = (probes, notes)
        except ProbeError as exc:
            outcome = exc
        except BaseException:
            if not self._closed:
                raise
            outcome = ([], [])  # the targets went away under it: the dashboard is gone
        finally:
            self._done()
        if not self._closed:
            deliver(outcome)

    def _done(self) -> None:
        """One worker is out; the last one out after ``close`` leaves the targets."""
        with self._lock:
            self._busy -= 1
            last = self._closed and self._busy == 0
            if self._busy == 0 and self._gc_paused:
                self._gc_paused = False
                collect_from_now()
        if last:
            self._stack.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            # Never begun (a quit before the session began): nothing will
            # leave the early start's scratch files but this.
            idle = self._busy == 0 or not self._called
        if idle:
            self._stack.close()


def _run_joining(plan: RunPlan[Any], module: commands.Command, fg: Foreground | None) -> int:
    """A dashboard whose probes join after its first frame (``_Joining``)."""
    passive = list(passive_probes(plan.common.interval_s))
    joining = _Joining(plan, module, {p.id for p in passive})
    config = dashboard_config(plan, passive, module, with_passive=False)
    try:
        return run_app(dataclasses.replace(config, joining=joining), plan=plan, module=module,
                       foreground=fg)  # fmt: skip
    finally:
        joining.close()


def _switched_plan(app: Any, plan: RunPlan[Any] | None, module: commands.Command | None) -> Any:
    """The plan a pane asked to switch to when it quit the dashboard
    (``app.switch_request``: the warm-up's fresh-volume "write then read"),
    or None."""
    if getattr(app, "switch_request", None) is None or plan is None or module is None:
        return None
    switch = getattr(module, "switched", None)
    return switch(plan) if switch is not None else None


def _run_confirmed(plan: RunPlan[Any], module: commands.Command) -> int:
    """Run ``plan`` behind the typed confirmation its probes ask for."""
    try:
        return _run_probes(plan, module)
    except ConfirmationRequired as exc:
        if not ask_confirmation(exc):
            return fail(f"{exc.action} not confirmed: nothing was written", 1)
        return _run_probes(module.confirmed(plan), module)


def ask_confirmation(request: ConfirmationRequired) -> bool:
    """Ask for the target's name before the dashboard opens; True if typed exactly."""
    from probetop.tui.ui.screens.confirm import ask_destroy_confirmation

    return ask_destroy_confirmation(request.target, request.action, list(request.signatures))


def run_app(
    config: AppConfig,
    *,
    plan: RunPlan[Any] | None = None,
    module: commands.Command | None = None,
    foreground: Foreground | None = None,
) -> int:
    """Show the dashboard until the user quits; return its exit code.

    A live dashboard of ``plan`` can be detached into a background session
    (``d``) when ``run_plan`` split the process first (``foreground``: the
    link to the waiter, or why there is none; ``tui.sessions.foreground``).
    If the user detaches, this returns when that session ends, after writing
    the command's headless report (``module.report``) to the session's log."""
    from probetop.themes import UnknownThemeError

    with imports_without_gc():
        from probetop.tui.ui.app import make_app  # Textual loads only here

    live = isinstance(config, LiveView) and bool(config.probes)
    if plan is not None and foreground is not None and live:
        link, why = foreground
        detach = Detachable(link, why, command_name=plan.command, name=plan.common.name)
        config = dataclasses.replace(config, detach=detach)
    try:
        app = make_app(config)  # validates --theme before the UI opens
    except UnknownThemeError as exc:
        return fail(str(exc), exc.exit_code)
    detached_code = asyncio.run(_show(app, config, plan, module))
    if detached_code is not None:
        return detached_code
    switched = _switched_plan(app, plan, module)
    if switched is not None and module is not None:
        return _run_confirmed(switched, module)
    code = int(app.return_code or 0)
    unclosed = app.session.recorder if app.session is not None else None
    if unclosed is not None:  # the app ended before its shutdown closed it (a crash)
        fail(f"the recording is incomplete: {unclosed.path} has no footer")
        return RECORDING_INCOMPLETE_EXIT
    signalled = _signalled_report(app, config, plan, module)
    if signalled is not None:
        return signalled
    if app.session is not None:
        # What stopped a probe (a target another run locked between the check
        # and the start: "in use by probetop PID N"), said again now the
        # terminal is back: the dashboard prints no report on q.
        for probe_id, error in app.session.hub.errors.items():
            print(f"probetop: error: {probe_id}: {error}", file=sys.stderr)
        for refused in app.session.not_started.values():
            # Said in the dashboard as "not started"; the status a headless
            # run gives for it (ProbeError at start: its exit code, 2).
            print(f"probetop: error: {refused}", file=sys.stderr)
            code = code or refused.exit_code
        if code == 1 and app.session.hub.errors:
            # The status the headless run of the command gives for a failed
            # probe (iops, warmup: 2, as their report; was 1 here, 2 headless).
            code = int(getattr(module, "FAILED_EXIT", 1))
    checks = config.footer_fields if isinstance(config, LiveView) else None
    if isinstance(checks, RunAssertions) and app.session is not None:
        # --assert in the dashboard: checked at quit, printed once the screen is gone.
        hub = app.session.hub
        outcomes = checks.outcomes(hub.summaries, hub.descriptions)
        print_outcomes(outcomes, sys.stdout)
        code = exit_status(code, outcomes)
    # A recording a write error stopped: said again now the terminal is back, exit 74.
    failures = app.session.recording_failures if app.session is not None else []
    return recording_status(failures, code)


async def _show(
    app: Any, config: AppConfig, plan: RunPlan[Any] | None, module: commands.Command | None
) -> int | None:
    """Run the app; if ``d`` detached it, carry its session on in this same
    event loop (the hub's tasks live here) and return that session's exit
    status; None when the user simply quit."""
    await app.run_async()
    if app.detached is None or app.session is None or plan is None:
        return None
    from probetop.tui.sessions.foreground import run_detached

    duration_s = config.duration_s if isinstance(config, LiveView) else None
    report = _command_report(config, plan, module)
    return await run_detached(app.detached, app.session, duration_s=duration_s, report=report)


def _command_report(
    config: AppConfig, plan: RunPlan[Any], module: commands.Command | None
) -> Callable[[RunResult], int]:
    """The command's headless report (or the generic one) with the
    dashboard's --assert outcomes: what a detached session writes to its log
    at its end, and what a dashboard a stop signal closed prints; returns
    the exit status, as the headless run's."""

    def report(result: RunResult) -> int:
        own = getattr(module, "report", None)
        code = (
            int(own(plan, result))
            if own is not None
            else generic_report(result, as_json=plan.common.json)
        )
        checks = config.footer_fields if isinstance(config, LiveView) else None
        if isinstance(checks, RunAssertions):
            described = {p.id: {"kind": p.kind} for p in result.probes}
            outcomes = checks.outcomes(result.summaries, described)
            print_outcomes(outcomes, sys.stdout)
            code = exit_status(code, outcomes)
        return recording_status(result.recording_failures, code)

    return report


def _signalled_report(
    app: Any, config: AppConfig, plan: RunPlan[Any] | None, module: commands.Command | None
) -> int | None:
    """A stop signal (SIGINT, SIGTERM, SIGHUP) closed a live dashboard, in
    view or suspended: the run was cut short, as a headless run a signal
    stops. Print the command's partial report (marked interrupted) now the
    terminal is the shell's again and return its status (128 + the signal's
    number, as headless). None when no signal ended a live run."""
    session = app.session
    if plan is None or session is None or not app.stop_signalled_seen:
        return None
    reason = session.end_reason
    if reason is None or not reason.startswith("interrupted"):
        return None
    if not session.probes_began:
        # Stopped while the view came up (a Ctrl-Z during start-up, then
        # `kill %1`): no probe ran, so there is no report to print; the
        # status is the signal's, as for a stop during a headless start-up.
        said = f"probetop: {reason} before the probes started: nothing was measured"
        if session.record_path is not None and not session.recording_failures:
            said += f" ({session.record_path} holds no sample)"
        with contextlib.suppress(OSError):
            print(said, file=sys.stderr)
        code = stopsignals.status_of(reason.removeprefix("interrupted (").rstrip(")"))
        return recording_status(session.recording_failures, code)
    from probetop.tui.sessions.foreground import session_result

    result = session_result(session, reason, session.record_path)
    try:
        return _command_report(config, plan, module)(result)
    except OSError as exc:  # the terminal is gone (SIGHUP): the status still tells
        code = output_failed(exc)
        return result.signal_status if code is None else code


def entry() -> None:
    """The console script: ``main``, then exit at once.

    By then every probe is stopped, the recording closed and the report
    printed; what is left is the interpreter's own shutdown (garbage
    collection over numba's and Textual's objects, threads abandoned by a
    probe that overran its stop), which took up to 1.8 s on a loaded machine
    and counts against the 2 s a stop may take."""
    from probetop.tui.run.stdio import lost_output, reopen_closed

    closed = reopen_closed()  # `probetop ... >&-`: no traceback after the run
    code: int | None = None
    try:
        code = lost_output(closed, main())
        flush_output()
    except KeyboardInterrupt:  # past main's own handling (a flood of kill): its status
        code = None
    exit_now(code)


if __name__ == "__main__":
    entry()
