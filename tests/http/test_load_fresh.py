"""Load mode --fresh against a real loopback server: one new TCP connection
per request, and each closed after libcurl has stamped the request's times
(not by libcurl inside ``total``, as FORBID_REUSE alone does)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import psutil
import pycurl
from http_fixtures import LocalServer
from probetop.probes.http.closing import DeferredClose
from probetop.probes.http.load.generator import new_handle
from probetop.probes.http.request import HttpRequest, configure


def run_worker(url: str, *, fresh: bool) -> list[dict[str, Any]]:
    """100 requests at 100/s on 4 connections; the worker's interval lines."""
    config = {
        "url": url,
        "request": HttpRequest().to_dict(),
        "rate": 100,
        "connections": 4,
        "time_s": 1,
        "interval_s": 0.5,
        "fresh": fresh,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "probetop.probes.http.load.generator"],
        input=json.dumps(config) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_fresh_opens_one_connection_per_request_and_reuse_keeps_them() -> None:
    for fresh in (True, False):
        with LocalServer() as server:
            lines = run_worker(f"{server.url}/", fresh=fresh)
            accepted = server.accepted
        assert lines[-1]["final"] and lines[-1]["unfinished"] == 0
        done = sum(line["done"] for line in lines)
        # Due but never sent by --time (a starved generator) is unsent, not
        # late: every scheduled request is one or the other.
        unsent = lines[-1]["unsent"]
        assert done + unsent == 100 and unsent <= 20, (done, unsent)
        assert not any(line["errors"] for line in lines)
        connects = sum(line["connects"] for line in lines)
        if fresh:
            assert accepted == connects == done
        else:
            assert accepted == connects <= 4


def sockets_to(port: int) -> int:
    """This process's TCP sockets connected to ``port``."""
    conns = psutil.Process().net_connections(kind="tcp")
    return sum(1 for c in conns if c.raddr and c.raddr.port == port)


def transfer(handle: Any) -> int:
    """Run one transfer on ``handle`` in a multi handle, as the worker does;
    libcurl's total (us), read once the transfer is reported done."""
    multi = pycurl.CurlMulti()
    multi.add_handle(handle)
    try:
        for _ in range(1000):  # bounded: a loopback reply takes a few rounds
            while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                pass
            _queued, ok, failed = multi.info_read()
            assert not failed
            if ok:
                return int(handle.getinfo(pycurl.TOTAL_TIME_T))
            multi.select(0.01)
        raise AssertionError("no reply in 10 s")
    finally:
        multi.remove_handle(handle)


def test_fresh_connection_closes_after_the_stamps_are_read() -> None:
    """With the worker's handle the connection is still open once libcurl
    has reported the transfer done (its total stamped), and closes with
    ``close_pending``; libcurl alone (FORBID_REUSE) has closed it by then,
    inside the timed transfer."""
    with LocalServer() as server:
        url = f"{server.url}/"
        closer = DeferredClose()
        handle = new_handle(HttpRequest(), url, fresh=True, closer=closer)
        for _ in range(3):
            assert transfer(handle) > 0
            assert sockets_to(server.port) == 1 and len(closer.pending) == 1
            closer.close_pending()
            assert sockets_to(server.port) == 0
        assert server.accepted == 3

        plain = pycurl.Curl()
        configure(plain, HttpRequest(), url, fresh=True)
        plain.setopt(pycurl.WRITEFUNCTION, lambda _data: None)
        assert transfer(plain) > 0
        assert sockets_to(server.port) == 0  # closed inside perform, before the stamps
        handle.close()
        plain.close()
