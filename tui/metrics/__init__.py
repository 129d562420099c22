"""Prometheus and OpenMetrics: live ``--metrics`` / ``--textfile`` and
``probetop export`` (CLI layer; docs/metrics.md).

- ``model``: ``MetricDef`` / ``Point`` / ``Histogram`` / ``Summary``, plain data
- ``catalog``: per family, samples (read through each family's typed
  records) to metrics; ``CATALOG`` lists every metric per command. Behind
  it: ``tracker`` (the ``Tracker`` base, shared helpers), ``buckets``
  (histogram bounds, ``BucketCounter``) and one module per family
  (``http_metrics``, ``icmp_metrics``, ``cpu_metrics``, ``iops_metrics``,
  ``warmup_metrics``)
- ``state``: ``MetricsState``, one tracker per probe, fed records in order
- ``families``: points as prometheus_client families (imported lazily)
- ``address``: the option values (light: ``tui/cli/plan.py`` imports it)
- ``live``: ``MetricsExporter``, the HTTP endpoint and the textfile
- ``export``: a recording to OpenMetrics, CSV or JSON, streamed

This package module imports nothing, so importing ``address`` stays cheap.
"""
