"""Which pane class shows which probe kind.

A family's descriptor names the pane of each kind it announces
(``Family.panes``: ``"kind": "module:Class"``; probes/registry.py finds the
family). Classes are imported lazily (only when such a probe is
announced). A kind that no family claims (an old recording's) gets
``GenericPane``, built from the probe's MetricSpecs, and a log line says
so; a pane path that does not import is a bug the families test catches,
also logged here if it ever reaches a user.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from probetop.probes import registry
from probetop.tui.ui.widgets.generic_pane import GenericPane
from probetop.tui.ui.widgets.pane import ProbePane

log = logging.getLogger(__name__)


def pane_path(kind: str) -> str | None:
    """The ``"module:Class"`` of the pane the kind's family names, or None."""
    family = registry.for_kind(kind)
    return family.panes[kind] if family is not None else None


def load_pane(target: str) -> type[ProbePane]:
    """The pane class at ``"module:Class"``; ImportError, AttributeError or
    TypeError (not a ProbePane) otherwise."""
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, ProbePane)):
        raise TypeError(f"{target} is not a ProbePane")
    return cls


def pane_class(kind: str) -> type[ProbePane]:
    """The pane class for a probe kind (GenericPane when no family claims it)."""
    target = pane_path(kind)
    if target is None:
        log.info("no probe family announces kind %r; using GenericPane", kind)
        return GenericPane
    try:
        return load_pane(target)
    except (ImportError, AttributeError, TypeError) as exc:
        log.warning("pane %s for %s unavailable (%s); using GenericPane", target, kind, exc)
        return GenericPane


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
