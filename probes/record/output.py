"""Files written at a user's word, other than recordings: replaced whole or not at all.

Contract of ``replace_file(path, verb=...)`` (a context manager yielding a
text file): ``export --out``, ``compare --plot`` and ``--textfile`` write
through it, so each output is
- checked first like a recording target (``check_output``): a device, FIFO,
  socket, kernel file or a file another probetop holds is refused
  (RecordingError naming ``verb`` and the path), never replaced;
- written to a new private file beside it (``mkstemp``: ``O_EXCL``, a random
  name, so a link planted in a shared directory is never followed), synced,
  then renamed over ``path``: readers (node_exporter, a browser) see the old
  file or the new one, never half of one; a write error (ENOSPC, EIO) leaves
  the old file as it was and no temporary file behind;
- through a symlink at ``path``, the file it points to is replaced (the link
  stays), unless another user planted the link (or owns the file) in a
  shared directory such as /tmp: ``check_target`` refuses it (``core.planted``);
- private (0600) unless ``mode`` says otherwise (the textfile is 0644: the
  collector reading it usually runs as another user);
- UTF-8, a name's bytes that are not UTF-8 (lone surrogates) written ``\\xNN``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from probetop.probes.record.codec import RecordingError
from probetop.probes.record.target import check_target


@contextlib.contextmanager
def replace_file(
    path: str | os.PathLike[str], *, verb: str = "write", mode: int = 0o600
) -> Iterator[TextIO]:
    """Write ``path`` whole or not at all, with permissions ``mode``; see the
    module docstring."""
    real = Path(check_target(path, verb=verb))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    except OSError as exc:
        raise RecordingError(
            f"cannot {verb} {path}: cannot create a file in {real.parent}: {exc.strerror}"
        ) from None
    try:
        if mode != 0o600:  # mkstemp's mode
            os.fchmod(fd, mode)
        # A name in bytes that are not UTF-8 (a recording's source file, a
        # target: lone surrogates here) is written as \xNN: with "strict" it
        # was a UnicodeEncodeError traceback (compare --plot's title).
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())  # ENOSPC/EIO surface here, before the rename
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise RecordingError(f"cannot {verb} {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
