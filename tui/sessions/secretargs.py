"""Options that hold secrets travel to another probetop over stdin, never argv.

Contract:
- ``private_args(args)``: ``(args to put on the command line, bytes for its
  stdin or None)``. When ``redact_argv`` would change ``args`` (a password,
  a token, a secret header, a body), the command line becomes
  ``--argv-stdin`` followed by the redacted arguments (what ``ps`` shows on
  both machines; they are not used) and the real ones go as one JSON line
  on stdin. Otherwise ``args`` as they are and None.
- ``read_argv_stdin()``: the far side. Reads that one line (at most
  ``MAX_BYTES``) and returns the arguments; exit 2 with a message on
  anything else. Only ``main`` calls it, when ``--argv-stdin`` is the first
  argument.

``--remote`` uses it for every command it runs on HOST: the ssh command
line here (``ps`` on this machine), the shell sshd starts there and the
probetop it runs never hold the secret.
"""

from __future__ import annotations

import json
import os
import sys

from probetop.probes.record import redact_argv

ARGV_STDIN = "--argv-stdin"
MAX_BYTES = 1 << 20


def private_args(args: list[str]) -> tuple[list[str], bytes | None]:
    """See the module docstring."""
    shown = redact_argv(args)
    if shown == args:
        return args, None
    return [ARGV_STDIN, *shown], (json.dumps(args) + "\n").encode()


def read_argv_stdin() -> list[str]:
    """The arguments sent by ``private_args`` (see the module docstring)."""
    data = b""
    while not data.endswith(b"\n") and len(data) <= MAX_BYTES:
        try:
            chunk = os.read(0, 1)  # byte by byte: nothing after the line is consumed
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    try:
        args = json.loads(data)
    except ValueError:
        args = None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        print(f"probetop: error: {ARGV_STDIN}: expected the arguments as one JSON list on "
              "stdin (probetop --remote sends them)", file=sys.stderr)  # fmt: skip
        raise SystemExit(2)
    return args
