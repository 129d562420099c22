"""The recording format's front door: write, read and check probetop sessions.

- ``Recorder``: writes a live session (JSON Lines, 0600, flushed twice a second)
- ``load_session`` / ``Session``: reads one back (torn last line tolerated)
- ``RecordingError``: any failure to write or read, with a message for the user
- ``FORMAT_NAME``, ``SCHEMA_VERSION``, ``schema_path()``: versioning and the
  JSON Schema every line validates against
- ``redact``, ``redact_url``, ``redact_header``, ``REDACTED``: what never
  reaches the disk (credentials)

The layout of each line is defined once, in ``codec.py``.
"""

from probetop.probes.record.codec import FORMAT_NAME, SCHEMA_VERSION, RecordingError
from probetop.probes.record.reader import Session, load_session
from probetop.probes.record.redaction import REDACTED, redact, redact_header, redact_url
from probetop.probes.record.writer import Recorder, schema_path

__all__ = [
    "FORMAT_NAME",
    "REDACTED",
    "SCHEMA_VERSION",
    "Recorder",
    "RecordingError",
    "Session",
    "load_session",
    "redact",
    "redact_header",
    "redact_url",
    "schema_path",
]
