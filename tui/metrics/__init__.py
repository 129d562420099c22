"""Prometheus and OpenMetrics: live ``--metrics`` / ``--textfile`` and
``probetop export`` (CLI layer; docs/metrics.md).

What Prometheus sees of a probe is its family's to decide: each family's
tracker (``probes/<family>/metrics.py``, exported as ``TRACKER``) on the
headless vocabulary of ``probes/core/metricdefs.py`` and
``probes/core/tracker.py``. This package serves and writes what they give:

- ``state``: ``MetricsState``, one tracker per probe, fed records in order;
  ``TRACKERS`` (kind -> tracker class) and ``CATALOG`` (every metric per
  command, for docs/metrics.md and its test)
- ``families``: points as prometheus_client families (imported lazily)
- ``address``: the option values (light: ``tui/cli/plan.py`` imports it)
- ``live``: ``MetricsExporter``, the HTTP endpoint and the textfile
- ``export``: a recording to OpenMetrics, CSV or JSON, streamed

This package module imports nothing, so importing ``address`` stays cheap.
"""
