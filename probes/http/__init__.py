"""The http family's front door: HTTP phase timings (DNS, TCP, TLS, server,
transfer) from libcurl's own clocks, one-off or sampled repeatedly.

Everything outside ``probes/http/`` imports from here, never from the modules
behind it:

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py lists it)
- ``SPEC``: the ``probetop http`` options (declarative; CLI, prompt, docs;
  ``CURL_GROUP`` names the group of curl's own):
  curl's options with curl's meanings, and the known curl options probetop
  refuses (hidden)
- ``HttpSettings``: what one run is made of (frozen, validated), including
  the ``HttpRequest`` (the curl options of every request)
- ``HttpProbe``: repeated sampling (a worker process, one libcurl multi handle)
- ``HttpInterval``, ``UrlInterval``, ``UrlRun``, ``Slowest``, ``HttpParams``, ``METRICS``,
  the metric names: what an http sample and an http probe's announcement
  carry, typed
- ``StatusClass``, ``STATUS_CLASSES``, ``classify``, ``ERROR_MARKER_SHARE``:
  the split of outcomes every HTTP statistic uses (status.py)
- one-off mode: ``check_url`` / ``HttpUrlError`` (exit 3 or 4),
  ``check_http_version``, ``fetch`` (one exchange, hop by hop) giving an
  ``Exchange`` with its curl exit code (``exit_status``) and ``message()``;
  ``write_out`` / ``WriteOut`` (curl's ``-w`` format)
- reports: ``render_exchange`` (the one-off waterfall, ``use_colour``),
  ``pycurlb_document`` (one-off ``--json``), ``render_report`` and
  ``json_report`` (the repeated-mode report, text or ``--json``)
- ``TRACKER``: the repeated mode's Prometheus metrics
  (``core.tracker.Tracker``); ``CHECKS``: what ``--assert`` reads from its
  summary, typed (``HttpFigures``), and how ``compare`` reads its samples
  (``core.checks.Checks``)

- load mode (``--rate``, docs/http-load.md): ``HttpLoadProbe``,
  ``LoadInterval``, ``LoadParams``, ``LOAD_KIND``, ``LOAD_METRICS``,
  ``LoadSettings``, ``render_load_report`` / ``load_json_report``

Importing this package is cheap: pycurl loads when a request is made, and
the repeated and load mode modules on first use of one of their names.
"""

from typing import TYPE_CHECKING, Any

from probetop.probes.http.curlinfo import libcurl_version
from probetop.probes.http.errorkinds import ERROR_KINDS, FAIL_EXIT
from probetop.probes.http.family import FAMILY
from probetop.probes.http.inputs import HttpUrlError
from probetop.probes.http.load.settings import MAX_RATE, LoadSettings
from probetop.probes.http.request import (
    HttpRequest,
    check_http_version,
    check_url,
)
from probetop.probes.http.settings import HttpSettings
from probetop.probes.http.spec import CURL as CURL_GROUP
from probetop.probes.http.spec import KIND, SPEC, unsupported_message
from probetop.probes.http.status import (
    CLASS_LABELS,
    ERROR_MARKER_SHARE,
    STATUS_CLASSES,
    StatusClass,
    classify,
)
from probetop.probes.http.transfer import Exchange, fetch
from probetop.probes.http.waterfall import render_exchange, use_colour

if TYPE_CHECKING:
    from probetop.probes.http.checks import CHECKS, HttpFigures
    from probetop.probes.http.load.probe import HttpLoadProbe
    from probetop.probes.http.load.records import (
        LOAD_KIND,
        LOAD_METRICS,
        PCT_KEYS,
        ClassLatency,
        LoadInterval,
        LoadParams,
    )
    from probetop.probes.http.load.report import load_json_report, render_load_report
    from probetop.probes.http.metrics import TRACKER
    from probetop.probes.http.probe import HttpProbe
    from probetop.probes.http.pycurlb import pycurlb_document
    from probetop.probes.http.records import (
        ERRORS,
        HTTP_CODE,
        METRICS,
        PHASES,
        REQUESTS,
        TOTAL_MS,
        TTFB_MS,
        HttpInterval,
        HttpParams,
        Slowest,
        UrlInterval,
        UrlRun,
        phase_metric,
    )
    from probetop.probes.http.report import json_report, render_report
    from probetop.probes.http.writeout import Transfer, WriteOut

# Repeated and load mode, the records, --json and -w load on first use of one
# of their names: a one-off request (`probetop http URL`, one process per call
# in a script's loop) pays only for what it prints (issue 28).
_LAZY = {
    "CHECKS": "checks",
    "HttpFigures": "checks",
    "TRACKER": "metrics",
    "HttpLoadProbe": "load.probe",
    "LOAD_KIND": "load.records",
    "LOAD_METRICS": "load.records",
    "PCT_KEYS": "load.records",
    "ClassLatency": "load.records",
    "LoadInterval": "load.records",
    "LoadParams": "load.records",
    "load_json_report": "load.report",
    "render_load_report": "load.report",
    "HttpProbe": "probe",
    "json_report": "report",
    "render_report": "report",
    "ERRORS": "records",
    "HTTP_CODE": "records",
    "METRICS": "records",
    "PHASES": "records",
    "REQUESTS": "records",
    "TOTAL_MS": "records",
    "TTFB_MS": "records",
    "HttpInterval": "records",
    "HttpParams": "records",
    "Slowest": "records",
    "UrlInterval": "records",
    "UrlRun": "records",
    "phase_metric": "records",
    "pycurlb_document": "pycurlb",
    "Transfer": "writeout",
    "WriteOut": "writeout",
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
    "CHECKS",
    "CLASS_LABELS",
    "CURL_GROUP",
    "ERRORS",
    "ERROR_KINDS",
    "ERROR_MARKER_SHARE",
    "FAIL_EXIT",
    "FAMILY",
    "HTTP_CODE",
    "KIND",
    "LOAD_KIND",
    "LOAD_METRICS",
    "MAX_RATE",
    "METRICS",
    "PCT_KEYS",
    "PHASES",
    "REQUESTS",
    "SPEC",
    "STATUS_CLASSES",
    "TOTAL_MS",
    "TRACKER",
    "TTFB_MS",
    "ClassLatency",
    "Exchange",
    "HttpFigures",
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
    "Transfer",
    "UrlInterval",
    "UrlRun",
    "WriteOut",
    "check_http_version",
    "check_url",
    "classify",
    "fetch",
    "json_report",
    "libcurl_version",
    "load_json_report",
    "phase_metric",
    "pycurlb_document",
    "render_exchange",
    "render_load_report",
    "render_report",
    "unsupported_message",
    "use_colour",
]
