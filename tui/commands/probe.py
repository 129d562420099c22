"""The one probe command: any probe family (``probes/registry.py``) run
through the hooks ``tui.main``, ``tui.run.launch`` and the add-probe prompt
call on a command (``tui/commands/__init__.py`` lists them).

Each hook reads the family's descriptor (``probes/core/family.py``); what
needs the program (a ``RunPlan``, the headless runner) stays here, so a
family's own code never imports tui.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import DemoContext, Family, RunOutcome
from probetop.probes.core.options import CommandSpec

if TYPE_CHECKING:
    from probetop.probes.core.sample import Sample
    from probetop.tui.cli.plan import CommonOptions, RunPlan


class ProbeCommand:
    """``probetop NAME`` for the family NAME. See the module docstring."""

    def __init__(self, family: Family[Any]) -> None:
        self.family = family
        self.SPEC: CommandSpec = family.spec
        self.FOCUS: str = family.focus
        self.WITH_PASSIVE: bool = family.with_passive
        self.BLOCKS_IN_KERNEL: bool = family.blocks_in_kernel
        self.NAMES_JOB: bool = family.names_job  # --name is also the job's name (fio)
        self.FAILED_EXIT: int = family.failed_exit

    def __repr__(self) -> str:
        return f"ProbeCommand({self.family.name!r})"

    def settings(self, values: Mapping[str, Any], common: CommonOptions) -> Any:
        return self.family.read_settings(values, common)

    def build_probes(self, plan: RunPlan[Any]) -> list[Probe]:
        return self.family.build_probes(plan.settings, plan.common)

    def report(self, plan: RunPlan[Any], result: RunOutcome) -> int:
        return self.family.report(plan.settings, plan.common, result)

    def live_text(
        self, plan: RunPlan[Any], probes: Sequence[Probe]
    ) -> tuple[Callable[[], str], Callable[[Sample], Sequence[str]]] | None:
        """The family's ``LiveText`` for this headless run: its banner (called
        once the probes started) and a fresh sample reader; None with --json
        (one JSON document at the end) or for a family without one."""
        live = self.family.live_text
        if live is None or plan.common.json:
            return None
        settings = plan.settings
        warned = "".join(f"{w.line}\n" for w in plan.tool_warnings if not w.on_stderr)
        return (lambda: warned + live.banner(settings, probes)), live.lines(settings)

    def deadline_s(self, plan: RunPlan[Any]) -> float | None:
        """When the runner stops the probes (None: they end themselves)."""
        return self.family.deadline_s(plan.settings, plan.common)

    def confirmed(self, plan: RunPlan[Any]) -> RunPlan[Any]:
        """The plan once the user typed the target's name (a family whose
        probes raise ConfirmationRequired has a ``confirmed`` hook)."""
        confirm = self.family.confirmed
        if confirm is None:
            raise TypeError(f"the {self.family.name} family asks no confirmation")
        return dataclasses.replace(plan, settings=confirm(plan.settings))

    def switched(self, plan: RunPlan[Any]) -> RunPlan[Any] | None:
        """The plan a pane's switch request runs next, or None."""
        switch = self.family.switched
        settings = switch(plan.settings) if switch is not None else None
        return None if settings is None else dataclasses.replace(plan, settings=settings)

    def run(self, plan: RunPlan[Any]) -> int | None:
        """A family's own way of running (http's one-off): an exit code, or
        None for the generic path (dashboard, or headless run + ``report``)."""
        one_off = self.family.one_off
        return one_off(plan.settings, plan.common) if one_off is not None else None

    def headless_only(self, plan: RunPlan[Any]) -> bool:
        """True when this plan runs headless even on a terminal (http's
        repeated mode without --watch)."""
        only = self.family.headless_only
        return only is not None and only(plan.settings)

    def demo_probes(self, ctx: DemoContext) -> list[Probe]:
        """What ``probetop demo`` runs for this family (none without a hook)."""
        make = self.family.demo_probes
        return make(ctx) if make is not None else []
