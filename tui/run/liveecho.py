"""A family's text report printed as a headless run goes (``LiveText``).

Contract:
- ``LiveEcho(banner, lines, probe_ids)`` is the runner's ``echo``:
  ``started()`` writes ``banner()``; ``sample(s)`` writes the lines
  ``lines(s)`` gives for a sample of one of ``probe_ids``; every write is
  flushed at once, so ``| tee log`` shows each line as it comes.
- A write stdout refuses (closed pipe, full disk) ends the echo, not the
  run: the probes go on (the recording, --metrics), and the report at the
  end meets the same error, which main already turns into its exit status.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Sequence
from typing import TextIO

from probetop.probes.core.sample import Sample


class LiveEcho:
    """See the module docstring."""

    def __init__(
        self,
        banner: Callable[[], str],
        lines: Callable[[Sample], Sequence[str]],
        probe_ids: Collection[str],
        out: TextIO | None = None,
    ) -> None:
        self._banner = banner
        self._lines = lines
        self._ids = frozenset(probe_ids)
        self._out = out
        self.failed: OSError | None = None

    def started(self) -> None:
        self._write(self._banner())

    def sample(self, sample: Sample) -> None:
        if sample.probe not in self._ids or self.failed is not None:
            return
        text = "".join(line + "\n" for line in self._lines(sample))
        if text:
            self._write(text)

    def _write(self, text: str) -> None:
        if self.failed is not None:
            return
        out = self._out or sys.stdout  # read late: tests swap sys.stdout
        try:
            out.write(text)
            out.flush()
        except OSError as exc:
            self.failed = exc
