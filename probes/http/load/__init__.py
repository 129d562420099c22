"""HTTP load mode (``probetop http URL --rate R``, docs/http-load.md), behind
the http family's front door: everything outside ``probes/http/`` reaches it
through ``probetop.probes.http``.

- ``settings``: the load options (``LOAD_OPTIONS``, part of http's ``SPEC``)
  and ``LoadSettings``
- ``probe``: ``HttpLoadProbe``, which runs ``generator`` in a worker process
  and emits one ``LoadInterval`` per interval
- ``generator``: the worker process sending requests on a fixed schedule
- ``hist``: the bounded latency histogram both sides fill and merge
- ``records``: what a load sample and summary carry, typed
- ``report``: the text report and the ``--json`` document

Importing this package loads nothing: the family's front door loads each
module on first use of one of its names.
"""
