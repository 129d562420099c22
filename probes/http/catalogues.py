"""The http family's metric catalogues, one per probe kind: repeated mode's
(``http``) and load mode's (``http.load``), in that order. ``FAMILY`` names
these tuples lazily, so building the descriptor imports none of them."""

from __future__ import annotations

from probetop.probes.http.checks import CHECKS as REPEATED_CHECKS
from probetop.probes.http.load.checks import LOAD_CHECKS
from probetop.probes.http.load.metrics import LOAD_TRACKER
from probetop.probes.http.metrics import TRACKER as REPEATED_TRACKER

TRACKERS = (REPEATED_TRACKER, LOAD_TRACKER)
CHECKS = (REPEATED_CHECKS, LOAD_CHECKS)
