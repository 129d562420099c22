"""sysbench 1.0.20's machinery that every sysbench test shares, used by the
``cpu`` and ``mem`` families (each keeps only what its test does differently):

- ``hist``: the latency histogram (1024 log-scale buckets) and its percentile
- ``counters``: one thread's counter slots, snapshots of every thread, the
  interval between two snapshots and the final report's latency and fairness
- ``report``: the report's shared sections ("General statistics", "Latency
  (ms)", "Threads fairness"), the ``[ Ns ]`` stamp, number formats, and a
  parser of those sections
- ``options``: the shared command-line options (--threads, --report-interval,
  --percentile, the trailing ``run``) and what they mean

No threads, no event loop, no I/O: pure arithmetic and layout.
"""

SYSBENCH_VERSION = "1.0.20"  # the sysbench whose tests and reports these follow
