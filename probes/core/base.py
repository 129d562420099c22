"""The Probe protocol, metric declarations and the error tree.

Contract for a probe (see docs/architecture.md):
- ``kind`` names the probe type ("cpu", "icmp", "disk", ...); ``id`` names this
  instance and is unique within a hub ("icmp:127.0.0.1").
- ``metrics`` declares every metric name the probe may put in ``Sample.values``
  (without the ``@entity`` suffix), with unit and description.
- ``run(emit)`` is a coroutine that measures until done or cancelled, calling
  ``emit`` with one ``Sample`` per interval (and ``Status`` records as needed).
  It must not block the event loop: hot loops run in threads that release the
  GIL or in worker processes. On cancellation it stops its workers before it
  returns or re-raises; it never leaves a thread or process behind.
- ``summary()`` returns a JSON-safe dict describing the whole run so far; it
  is called after ``run`` ends (also after cancellation) for the footer and
  the headless report.
- ``prepare()`` checks target, parameters and privileges and raises
  ``ProbeError`` with a message that says what to do; the hub calls it when
  the probe is added, so the CLI fails before the UI opens. Errors inside an
  interval are data (a ``Status`` or a counted error), never exceptions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # a probe's module imports the records; the error tree needs none
    from probetop.probes.core.sample import Record


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric a probe reports: its key name, unit and meaning.

    ``primary`` metrics get sparklines in the generic pane; the rest are
    shown in its table.
    """

    name: str
    unit: str
    description: str
    primary: bool = False


Emit = Callable[["Record"], None]


@runtime_checkable
class Probe(Protocol):
    """What the hub runs. See the module docstring for the contract."""

    kind: str
    id: str
    metrics: tuple[MetricSpec, ...]

    def prepare(self) -> None:
        """Check target, parameters and privileges; raise ProbeError if the probe
        cannot run. Cheap and synchronous: called before any UI opens."""
        ...

    def params(self) -> Mapping[str, Any]:
        """The parameters this instance runs with (JSON-safe), for the header."""
        ...

    def reference_command(self) -> str | None:
        """The equivalent reference-tool command line, if there is one."""
        ...

    async def run(self, emit: Emit) -> None:
        """Measure until done or cancelled, emitting one Sample per interval."""
        ...

    def summary(self) -> Mapping[str, Any]:
        """A JSON-safe summary of the run so far."""
        ...


class ProbeError(Exception):
    """A probe cannot start. The message says what the user should do.

    ``code`` names the kind of failure for programs (never match the
    message's text); ``exit_code`` is the process exit status it maps to.
    """

    code = "probe"
    exit_code = 2


class PermissionProbeError(ProbeError):
    """Missing privilege (root, CAP_NET_RAW, device access)."""

    code = "permission"


class TargetProbeError(ProbeError):
    """The target is missing, invalid or refused (bad host, path, URL)."""

    code = "target"


class UsageProbeError(ProbeError):
    """A parameter is out of range or parameters contradict each other."""

    code = "usage"


class ConfirmationRequired(ProbeError):
    """A run would destroy data on ``target`` and nobody confirmed it yet.

    The CLI asks for the target's name (dashboard) or refuses (headless,
    exit 2); ``action`` says what would be destroyed ("a write pass", "random
    writes") and ``signatures`` lists data found on the target.
    """

    code = "confirmation-required"

    def __init__(
        self, message: str, *, target: str, action: str, signatures: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.target = target
        self.action = action
        self.signatures = signatures


def describe(probe: Probe) -> dict[str, Any]:
    """The JSON-safe description written to recordings and sent in Announce."""
    return {
        "id": probe.id,
        "kind": probe.kind,
        "params": dict(probe.params()),
        "reference_command": probe.reference_command(),
        "metrics": [
            {"name": m.name, "unit": m.unit, "description": m.description, "primary": m.primary}
            for m in probe.metrics
        ],
    }
