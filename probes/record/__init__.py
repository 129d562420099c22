"""The recording format's front door: write, read and check probetop sessions.

- ``Recorder``: writes a live session (JSON Lines, 0600, flushed twice a second);
  ``FooterFields``: the type of its hook that adds fields to the footer;
  ``on_header``: a hook called once a recording's header is in its file
- ``load_session`` / ``Session``: reads one back (torn last line tolerated);
  ``RecordSequence``: its records, each made when read
- ``SessionLoader``: the same, a step at a time (a replay's first frame)
- ``stream_session`` / ``SessionStream``: the same checks, one line at a time
  (one pass over a long recording in constant memory)
- ``decode_line`` / ``DecodedLine``: one line's checks and records, for a
  reader that gets the lines another way (a remote view over SSH)
- ``RecordingFollower``: the same checks over a recording still being
  written, new whole lines at each ``poll`` (``probetop attach``)
- ``RecordingError``: any failure to write or read, with a message for the user
- ``FORMAT_NAME``, ``SCHEMA_VERSION``, ``schema_path()``: versioning and the
  JSON Schema every line validates against
- ``redact`` (any JSON-safe structure), ``redact_url``, ``redact_header``,
  ``redact_text``, ``redact_shown`` (a value quoted in a message),
  ``redact_argv``, ``body_digest``, ``REDACTED``,
  ``KEEP_BODY_FLAG``: what never reaches the disk or a report (credentials,
  request bodies), one set of rules in ``redaction.py``

- ``is_zstd``: whether a file's first bytes are a zstandard (``.zst``) recording's

The modules, one job each:
- ``codec``: the line format (layout, versioning, encode/decode);
- ``errors``: ``RecordingError`` and the exit status of an incomplete
  recording, named by programs that load neither the codec nor the writer;
- writing: ``writer`` (the ``Recorder``), ``linefile`` / ``zstdfile`` (whole
  lines to a plain or ``.zst`` file), ``target`` (what may be written to),
  ``hostinfo`` (the header's host facts), ``output`` (other files written whole);
- reading, four modules: ``rawlines`` (a file, plain or zstandard, cut into
  whole lines, its byte limits), ``linecheck`` (what a valid line is: checks,
  content limits, the per-line fast path), ``fastpath`` (a block of lines in
  one typed decode, msgspec), ``reader`` (the ``Session`` and the ways to
  read one: load, step, stream, follow);
- ``redaction`` and ``cmdline``: what never reaches a disk or another user.

The codec, the writer and the readers load on first use of one of their
names: a one-off ``probetop http URL`` only redacts, and pays for none of them.
"""

from typing import TYPE_CHECKING, Any

from probetop.probes.record.cmdline import hide_cmdline_secrets
from probetop.probes.record.redaction import (
    KEEP_BODY_FLAG,
    REDACTED,
    body_digest,
    redact,
    redact_argv,
    redact_header,
    redact_shown,
    redact_text,
    redact_url,
    set_body_key_loader,
)

__all__ = [
    "FORMAT_NAME",
    "KEEP_BODY_FLAG",
    "RECORDING_INCOMPLETE_EXIT",
    "REDACTED",
    "SCHEMA_VERSION",
    "DecodedLine",
    "FooterFields",
    "RecordSequence",
    "Recorder",
    "RecordingError",
    "RecordingFollower",
    "Session",
    "SessionLoader",
    "SessionStream",
    "body_digest",
    "check_output",
    "decode_line",
    "hide_cmdline_secrets",
    "is_zstd",
    "load_session",
    "on_header",
    "redact",
    "redact_argv",
    "redact_header",
    "redact_shown",
    "redact_text",
    "redact_url",
    "replace_file",
    "schema_path",
    "set_body_key_loader",
    "stream_session",
]


if TYPE_CHECKING:
    from probetop.probes.record.codec import FORMAT_NAME, SCHEMA_VERSION
    from probetop.probes.record.errors import RECORDING_INCOMPLETE_EXIT, RecordingError
    from probetop.probes.record.output import replace_file
    from probetop.probes.record.rawlines import is_zstd
    from probetop.probes.record.reader import (
        DecodedLine,
        RecordingFollower,
        RecordSequence,
        Session,
        SessionLoader,
        SessionStream,
        decode_line,
        load_session,
        stream_session,
    )
    from probetop.probes.record.target import check_target as check_output
    from probetop.probes.record.writer import (
        FooterFields,
        Recorder,
        on_header,
        schema_path,
    )

# The codec (orjson), the writer (asyncio, psutil), the readers and the output
# checks load on first use: a one-off `probetop http URL` only redacts, and
# pays for none of them (issue 28).
_LAZY = {
    "FORMAT_NAME": "codec",
    "SCHEMA_VERSION": "codec",
    "RecordingError": "errors",
    "RECORDING_INCOMPLETE_EXIT": "errors",
    "FooterFields": "writer",
    "Recorder": "writer",
    "on_header": "writer",
    "schema_path": "writer",
    "check_output": "target",
    "replace_file": "output",
    "is_zstd": "rawlines",
    "DecodedLine": "reader",
    "RecordingFollower": "reader",
    "decode_line": "reader",
    "RecordSequence": "reader",
    "Session": "reader",
    "SessionLoader": "reader",
    "SessionStream": "reader",
    "load_session": "reader",
    "stream_session": "reader",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    attr = "check_target" if name == "check_output" else name
    value = getattr(import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value
