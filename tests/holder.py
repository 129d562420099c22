"""A child Python process that takes hold of something (a kept loop, a cache
entry), says so on one stdout line, and keeps it until the test lets go
(tests only).

``with holding(script, *args, env=env, ready="held") as child:`` starts
``python -c script args``, fails the test unless its first line is
``ready``, and on leaving closes its stdin (the script ends on EOF) and
waits for it, so whatever it held is released when the block ends.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator, Mapping


@contextlib.contextmanager
def holding(
    script: str, *args: str, env: Mapping[str, str], ready: str
) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(env),
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == f"{ready}\n", f"holder said {line!r}, not {ready!r}"
        yield child
    finally:
        child.communicate("", timeout=60)
