"""What the reader accepts: the limits that bound a recording's size and memory
(docs/recording-format.md, "Reading recordings back")."""

MAX_LINE_BYTES = 1 << 20
"""Longest line read (1 MiB): a sample or status line is a few KiB."""
MAX_FOOTER_BYTES = 64 << 20
"""Longest footer line: the footer holds every probe's summary, which grows
with the run (per-interval rows: 2.4 MB after an hour of `probetop demo`);
64 MiB is over a day of it. Only a line that starts as a footer may be this
long, so a hostile file still costs at most 1 MiB per line until then."""
_FOOTER_START = b'{"type":"footer"'
MAX_FILE_BYTES = 256 << 20
"""Largest recording read (256 MiB: about 9 hours of `probetop demo`)."""
MAX_WEIGHT = 20_000_000
"""What the kept lines may weigh in all, counting each JSON number, string
and object key 1 and each object or array 3 (about 40 bytes of memory per
unit): this, not the byte size, bounds the memory of a hostile file
(``{}`` is 2 bytes on disk and 64 in memory)."""
MAX_NAME = 256
"""Longest probe id, kind, metric name or value key."""
MAX_PROBES = 1024
"""Most distinct probes in one recording (each is a pane in a replay)."""
MAX_T = 1e10
"""Largest time stamp, in seconds since the session start (317 years)."""
MAX_VALUE = 1e100
"""Largest metric value magnitude: far above any real metric, small enough
that the report's sums and squares of them stay finite."""
