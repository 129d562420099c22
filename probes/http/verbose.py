"""curl's -v: what libcurl tells its debug callback, written as the curl tool
writes it on stderr.

Contract:
- ``VerboseTrace(out, data_notes=True)`` is a pycurl DEBUGFUNCTION
  (``trace(kind, data)``) writing to the binary stream ``out``:
  - libcurl's notes as ``* `` lines, in libcurl's own words (the libcurl
    pycurl carries, so they follow curl 8.x, not an older curl tool);
  - the request's header lines as ``> `` lines, each response header as a
    ``< `` line, byte for byte as sent and received (CRLF kept);
  - body and TLS data as one ``{ [N bytes data]`` (received) or
    ``} [N bytes data]`` (sent) line for the first chunk of each run of
    data, and none when the body itself goes to a terminal
    (``data_notes`` False), as curl -v.
- ``note(text)``: a ``* `` line of our own where probetop, not libcurl,
  does the step (the next redirect hop).
- A line that a chunk left open is continued by the next chunk without a
  new prefix, as curl does.
Timing: like curl -v, the callback runs inside the transfer; its cost is in
the phases measured (docs/http.md).
"""

from __future__ import annotations

from typing import BinaryIO

# libcurl's curl_infotype numbers, as pycurl's INFOTYPE_* constants.
TEXT, HEADER_IN, HEADER_OUT, DATA_IN, DATA_OUT, SSL_DATA_IN, SSL_DATA_OUT = range(7)
_PREFIX = {
    TEXT: b"* ",
    HEADER_IN: b"< ",
    HEADER_OUT: b"> ",
    DATA_IN: b"{ ",
    DATA_OUT: b"} ",
    SSL_DATA_IN: b"{ ",
    SSL_DATA_OUT: b"} ",
}


class VerboseTrace:
    """See the module docstring."""

    def __init__(self, out: BinaryIO, *, data_notes: bool = True) -> None:
        self.out = out
        self.data_notes = data_notes
        self._open_line = False  # the last chunk did not end its line
        self._in_data = False  # a data note was written for the current run

    def __call__(self, kind: int, data: bytes) -> None:
        prefix = _PREFIX.get(kind)
        if prefix is None:
            self._open_line = self._in_data = False
            return
        if kind in (DATA_IN, DATA_OUT, SSL_DATA_IN, SSL_DATA_OUT):
            if not self._in_data and self.data_notes:
                self._write(prefix, b"[%d bytes data]\n" % len(data))
                self._in_data = True
            return
        self._in_data = False
        if kind == HEADER_OUT:  # the whole request head in one chunk: a prefix per line
            start = 0
            while start < len(data):
                end = data.find(b"\n", start)
                end = len(data) if end < 0 else end + 1
                self._write(prefix, data[start:end])
                start = end
        elif data:
            self._write(prefix, data)
        self.out.flush()

    def note(self, text: str) -> None:
        self(TEXT, text.encode("utf-8", "surrogateescape") + b"\n")

    def _write(self, prefix: bytes, data: bytes) -> None:
        if not self._open_line:
            self.out.write(prefix)
        self.out.write(data)
        self._open_line = not data.endswith(b"\n")
