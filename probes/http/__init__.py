"""The http family's front door: HTTP phase timings (DNS, TCP, TLS, server,
transfer) from libcurl's own clocks, one-off or sampled repeatedly.

Everything outside ``probes/http/`` imports from here, never from the modules
behind it; this exports what is used outside the family and nothing more
(tests/core/test_front_door_surface.py holds that):

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py
  lists it): probe factory, reports, metrics and ``--assert`` checks
- ``SPEC``: the ``probetop http`` options (``tui/fastpath.py`` parses a
  one-off request with it; ``CURL_GROUP`` names the group of curl's own);
  ``unsupported_message``: why a known curl option is refused
- ``HttpSettings``: what one run is made of (frozen, validated), including
  the ``HttpRequest`` (the curl options of every request)
- ``HttpProbe``: repeated sampling (a worker process, one libcurl multi handle)
- ``HttpInterval``, ``UrlInterval``, ``UrlRun``, ``Slowest``, ``HttpParams``,
  ``METRICS``, ``PHASES``, ``phase_metric`` and the metric names the
  pane reads (``TOTAL_MS``, ``TTFB_MS``): what an http sample and an http
  probe's announcement carry, typed
- ``StatusClass``, ``STATUS_CLASSES``, ``CLASS_LABELS``, ``ERROR_MARKER_SHARE``:
  the split of outcomes every HTTP statistic uses (status.py)
- one-off mode: ``check_url`` / ``HttpUrlError`` (exit 3 or 4), ``fetch``
  (one exchange, hop by hop), ``render_exchange`` (the waterfall)
- load mode (``--rate``, docs/http-load.md): ``HttpLoadProbe``, ``LoadSettings``
  (``MAX_RATE``), ``LoadInterval``, ``LoadParams``, ``LOAD_METRICS``,
  ``PCT_KEYS``, ``ClassLatency``

Importing this package is cheap: pycurl loads when a request is made, and
the repeated and load mode modules on first use of one of their names.
"""

from typing import TYPE_CHECKING, Any

from probetop.probes.http.family import FAMILY
from probetop.probes.http.inputs import HttpUrlError
from probetop.probes.http.load.settings import MAX_RATE, LoadSettings
from probetop.probes.http.request import HttpRequest, check_url
from probetop.probes.http.settings import HttpSettings
from probetop.probes.http.spec import CURL as CURL_GROUP
from probetop.probes.http.spec import SPEC, unsupported_message
from probetop.probes.http.status import (
    CLASS_LABELS,
    ERROR_MARKER_SHARE,
    STATUS_CLASSES,
    StatusClass,
)
from probetop.probes.http.transfer import fetch
from probetop.probes.http.waterfall import render_exchange

if TYPE_CHECKING:
    from probetop.probes.http.load.probe import HttpLoadProbe
    from probetop.probes.http.load.records import (
        LOAD_METRICS,
        PCT_KEYS,
        ClassLatency,
        LoadInterval,
        LoadParams,
    )
    from probetop.probes.http.probe import HttpProbe
    from probetop.probes.http.records import (
        METRICS,
        PHASES,
        TOTAL_MS,
        TTFB_MS,
        HttpInterval,
        HttpParams,
        Slowest,
        UrlInterval,
        UrlRun,
        phase_metric,
    )

# Repeated and load mode, the records, --json and -w load on first use of one
# of their names: a one-off request (`probetop http URL`, one process per call
# in a script's loop) pays only for what it prints (issue 28).
_LAZY = {
    "HttpLoadProbe": "load.probe",
    "LOAD_METRICS": "load.records",
    "PCT_KEYS": "load.records",
    "ClassLatency": "load.records",
    "LoadInterval": "load.records",
    "LoadParams": "load.records",
    "HttpProbe": "probe",
    "METRICS": "records",
    "PHASES": "records",
    "TOTAL_MS": "records",
    "TTFB_MS": "records",
    "HttpInterval": "records",
    "HttpParams": "records",
    "Slowest": "records",
    "UrlInterval": "records",
    "UrlRun": "records",
    "phase_metric": "records",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CLASS_LABELS",
    "CURL_GROUP",
    "ERROR_MARKER_SHARE",
    "FAMILY",
    "LOAD_METRICS",
    "MAX_RATE",
    "METRICS",
    "PCT_KEYS",
    "PHASES",
    "SPEC",
    "STATUS_CLASSES",
    "TOTAL_MS",
    "TTFB_MS",
    "ClassLatency",
    "HttpInterval",
    "HttpLoadProbe",
    "HttpParams",
    "HttpProbe",
    "HttpRequest",
    "HttpSettings",
    "HttpUrlError",
    "LoadInterval",
    "LoadParams",
    "LoadSettings",
    "Slowest",
    "StatusClass",
    "UrlInterval",
    "UrlRun",
    "check_url",
    "fetch",
    "phase_metric",
    "render_exchange",
    "unsupported_message",
]
