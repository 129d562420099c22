"""Which pane class shows which probe kind.

Probe engineers add ONE line to ``PANE_CLASSES``: ``"kind": "module:Class"``.
Classes are imported lazily (only when such a probe is announced), and any
kind without an entry, or whose pane fails to import, gets ``GenericPane``,
built from the probe's MetricSpecs.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from probetop.tui.ui.widgets.generic_pane import GenericPane
from probetop.tui.ui.widgets.pane import ProbePane

log = logging.getLogger(__name__)

PANE_CLASSES: dict[str, str] = {
    "system.cpu": "probetop.tui.ui.panes.system:CpuPane",
    "system.disk": "probetop.tui.ui.panes.system:DiskPane",
    "system.net": "probetop.tui.ui.panes.system:NetPane",
    "cpu": "probetop.tui.ui.panes.cpu:CpuBenchPane",
    "mem": "probetop.tui.ui.panes.mem:MemBenchPane",
    "http": "probetop.tui.ui.panes.http:HttpPane",
    "http.load": "probetop.tui.ui.panes.httpload:HttpLoadPane",
    "icmp": "probetop.tui.ui.panes.icmp:IcmpPane",
    "iops": "probetop.tui.ui.panes.disk:IopsPane",
    "warmup": "probetop.tui.ui.panes.disk:WarmupPane",
}


def pane_class(kind: str) -> type[ProbePane]:
    """The pane class for a probe kind (GenericPane when none is registered)."""
    target = PANE_CLASSES.get(kind)
    if target is None:
        return GenericPane
    module_name, _, class_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        log.warning("pane %s for %s unavailable (%s); using GenericPane", target, kind, exc)
        return GenericPane
    if not (isinstance(cls, type) and issubclass(cls, ProbePane)):
        return GenericPane
    return cls


def pane_for(info: Mapping[str, Any]) -> ProbePane:
    """A new pane for an announced probe (``Announce.info``).

    A description a pane cannot read (a hand-edited recording: a parameter of
    the wrong type) gets the generic pane, built from the metric specs, rather
    than a traceback that ends the replay; the reason is logged."""
    cls = pane_class(str(info.get("kind", "")))
    try:
        return cls(info)
    except Exception as exc:
        if cls is not GenericPane:
            log.warning("pane %s cannot read %r (%s); using GenericPane", cls, info.get("id"), exc)
            try:
                return GenericPane(info)
            except Exception:  # pragma: no cover - the generic pane reads only metric specs
                pass
        safe = {"id": str(info.get("id", "?")), "kind": str(info.get("kind", "?")), "metrics": []}
        return GenericPane(safe)
