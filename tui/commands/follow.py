"""`probetop follow NAME [--from-line N]`: a session's recording on stdout, followed.

The transport of the remote views (``--remote``, ``attach --remote``): run
over SSH on the session's host, it sends the recording's lines (plain JSON
Lines, decompressed if the recording is ``.zst``), then each new whole line
as the session writes it, until the footer or the session's end. Only
sample lines travel, never screen updates. ``--from-line N`` skips the first
N lines, so a view that lost its link resumes exactly after the last line
it has: no gap, no duplicate. While nothing new arrives it writes an empty
line every ``KEEPALIVE_S``, so the view can tell a quiet session from a dead
link. Also handy by hand: ``probetop follow NAME | jq``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import CommandSpec, Option, duration, whole_number
from probetop.probes.record import RecordingError, RecordingFollower
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.sessions.registry import find, meta_path, read_info, started
from probetop.tui.sessions.viewcodec import ViewEncoder

POLL_S = 0.25
KEEPALIVE_S = 2.0
BATCH_S = 1.0  # --compact without --batch: the panes redraw once a second
MAX_BATCH_S = 5.0  # well inside the view's 10 s without a byte before it calls the link lost

SPEC = CommandSpec(
    name="follow",
    help="print a session's recording as JSON Lines and follow it (the remote views' transport)",
    description="""\
Print the recording of a session (started with --detach) as JSON Lines on
stdout, decompressed, then every new line as the session writes it, until
the session ends. --from-line N skips the first N lines (a view that lost
its link resumes after the last line it has). While nothing new arrives, an
empty line every 2 s shows the link is alive. `probetop --remote HOST` and
`probetop attach --remote HOST NAME` run it on HOST over ssh.
""",
    options=(
        Option(("session",), "the session's name (`probetop ls`)", metavar="NAME", nargs="?"),
        Option(
            ("--from-line",),
            "skip the first N lines of the recording (default 0: from its header)",
            parse=whole_number(minimum=0),
            default=0,
            metavar="N",
        ),
        Option(
            ("--compact",),
            "the remote views' link: the values at the digits the panes print, each coded "
            "against a prediction in an adaptive range coder, sent in batches "
            "(tui/sessions/viewcodec.py); a binary stream, not JSON Lines",
            action="store_true",
            default=False,
        ),
        Option(
            ("--batch",),
            "with --compact: send new lines at most every S seconds (default 1; each "
            "batch costs an SSH packet, ~40 bytes)",
            parse=duration(positive=True),
            default=None,
            metavar="S",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class FollowSettings:
    session: str | None
    from_line: int = 0
    compact: bool = False
    batch_s: float | None = None


def settings(values: Mapping[str, Any], common: CommonOptions) -> FollowSettings:
    batch = values.get("batch")
    if batch is not None and not values.get("compact"):
        raise UsageProbeError("follow: --batch needs --compact (plain lines go out as written)")
    if batch is not None and batch > MAX_BATCH_S:
        raise UsageProbeError(f"follow: --batch {batch:g}: at most {MAX_BATCH_S:g} seconds")
    return FollowSettings(
        session=values.get("session"),
        from_line=int(values.get("from_line") or 0),
        compact=bool(values.get("compact")),
        batch_s=values.get("batch"),
    )


class _Plain:
    """The recording's lines as they are."""

    batch_s = 0.0  # each poll's lines go out at once

    def encode(self, lines: list[bytes], *, live: bool = True) -> bytes:
        return b"".join(raw + b"\n" for raw in lines)

    def keepalive(self) -> bytes:
        return b"\n"


def _write(data: bytes) -> bool:
    """Write all of ``data`` to stdout; False once the reader is gone."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(1, view) :]
    except (BrokenPipeError, OSError):
        return False
    return True


def run(plan: RunPlan[FollowSettings]) -> int:
    info = started(find(plan.settings.session))  # a starting one has no recording yet
    skip = plan.settings.from_line
    try:
        follower = RecordingFollower(info.recording)
    except RecordingError as exc:
        raise RecordingError(f"session {info.name}: {exc}") from None
    codec = ViewEncoder() if plan.settings.compact else _Plain()
    # --compact: a batch at most every batch_s; each costs an SSH packet (~40 B
    # of headers and MAC), more than a second of samples' values.
    batch_s = (plan.settings.batch_s or BATCH_S) if plan.settings.compact else 0.0
    sent_at = time.monotonic() - batch_s  # the history goes out at once
    last_round = False  # the session ended: one more read for what it wrote last
    pending: list[bytes] = []
    backlog = True  # until caught up: the history, which --compact sends at full precision
    with follower:
        while True:
            lines = follower.poll_lines()
            ended = False
            for raw in lines:
                if skip:
                    skip -= 1
                else:
                    pending.append(raw)
                ended = ended or raw.startswith(b'{"type":"footer"')
            done = ended or (last_round and follower.caught_up)
            if pending and (done or time.monotonic() - sent_at >= batch_s):
                if not _write(codec.encode(pending, live=not backlog)):
                    return 0  # the view left
                backlog = backlog and not follower.caught_up
                pending = []
                sent_at = time.monotonic()
            if done and not pending:
                return 0
            if follower.caught_up and not lines:
                current = read_info(meta_path(info.name))
                if current is None or not current.live:
                    last_round = True  # died or finished: read once more, then stop
                    continue
                if not pending and time.monotonic() - sent_at >= KEEPALIVE_S:
                    if not _write(codec.keepalive()):
                        return 0
                    sent_at = time.monotonic()
                time.sleep(POLL_S)
