"""Start-up imports without the cyclic garbage collector (issue 28).

Importing builds objects that live as long as the process (modules, classes,
dataclasses, option tables, Textual's widgets and CSS): a few hundred
thousand, and each collection the imports set off walks the young ones
again, a gen-2 one all of them. Start-up does not need any of that work.

Contract:
- ``imports_without_gc()``: a context manager for a block of imports. Inside
  it the collector is off; at its end (also on an exception) what exists is
  frozen out of the collector's reach (``gc.freeze``, so the first
  collection after it does not walk everything the imports made) and the
  collector is on again, if it was on when the block began. Nested uses
  and a collector already off are left as they were.
- ``collect_from_now()``: the same end for a collector some code turned off
  before it could import this module (tui/fastpath.py at its first line).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def collect_from_now() -> None:
    """Freeze what exists, then turn the collector on."""
    gc.freeze()
    gc.enable()


@contextlib.contextmanager
def imports_without_gc() -> Iterator[None]:
    """The collector off for the block's imports (see the module docstring)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        collect_from_now()
