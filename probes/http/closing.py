"""Closing a fresh connection after libcurl has timed its transfer.

libcurl closes a FORBID_REUSE connection (and one it evicts from a full pool)
inside ``curl_multi_perform``, before it stamps the transfer's ``total``: the
close(2), on loopback a FIN through both TCP stacks, lands in the transfer
phase. A ``curl`` process closes its connection after ``-w`` has its numbers.

``DeferredClose`` is libcurl's close-socket callback: it only notes the
descriptor (libcurl forgets the socket either way) and ``close_pending()``
closes every noted one, which the caller does once it has read the stamps of
the finished transfers.

Contract: ``install(handle)`` on an easy handle after its options are set
(``reset()`` drops the callback); call ``close_pending()`` after each round
of perform + info_read (libcurl calls back only from inside those). A noted
descriptor is closed by nothing else. The easy handle must outlive its connections: pycurl
runs the callback through the handle that opened the socket.
"""

from __future__ import annotations

import os
from typing import Any


class DeferredClose:
    """The sockets libcurl has let go of and this process still has to close."""

    def __init__(self) -> None:
        self.pending: list[int] = []

    def _note(self, fd: int) -> int:
        self.pending.append(fd)
        return 0  # libcurl's "closed"

    def install(self, handle: Any) -> None:
        """Route the sockets ``handle`` opens through this closer."""
        import pycurl

        handle.setopt(pycurl.CLOSESOCKETFUNCTION, self._note)

    def close_pending(self) -> None:
        """Close every noted socket (after the stamps are read)."""
        pending, self.pending = self.pending, []
        for fd in pending:
            try:
                os.close(fd)
            except OSError:
                pass  # already gone: nothing left to release
