"""The repeated-sampling engine: a worker process driving one libcurl multi handle.

Run as ``python -m probetop.probes.http.worker``; the parent (``probe.HttpProbe``)
writes one JSON line of configuration to stdin and reads one JSON line per
finished request from stdout.

Why a process: libcurl stamps a socket event when ``curl_multi_perform`` runs
after the socket became ready. In a thread of the dashboard process that call
would first wait for the GIL, which the UI may hold for milliseconds, and the
wait would be counted as server time. A process of its own has no one to
wait for. One multi handle serves every URL, so 100 URLs cost one process.

Contract:
- Config: ``{"urls": [...], "request": HttpRequest.to_dict(), "interval_s": S,
  "count": N or null, "fresh": bool, "origin_ns": the parent's tick grid,
  "jitter": fraction of a slot (default 0.5)}``.
- URL i is due at ``origin + (i + 1/2) x interval / len(urls)`` plus whole
  intervals: requests spread evenly over the interval instead of arriving as
  a burst, and away from the parent's ticks, when samples are emitted and
  recorded (on a 2-core machine a local server competing with that work
  answers later, and that would be probetop perturbing what it measures),
  with random jitter of +-jitter/2 slot around that centre (see ``run``).
  The first turns already past when the worker starts are skipped. A
  URL whose previous request is still running when due skips that turn
  (counted in ``skipped``, as is every turn that came while it ran, even
  one this loop woke too late for), so a slow URL never delays the others.
- Each output line: ``{"i", "t_ns", "stamps_us", "http_code", "http_version",
  "error", "message", "curl_code", "size_download", "num_connects",
  "redirect_count", "content_length", "body_bytes", "primary_ip", "skipped"}``
  for a finished request (``curl_code``:
  libcurl's CURLE_* number of a failed transfer, curl's exit code; 0 for
  none; ``content_length``: the final response's Content-Length, -1 without
  one; ``body_bytes``: its body's size, null with ``--compressed`` (libcurl
  counts the bytes before decoding); ``primary_ip``: the address of the last
  connection, "" without one; all read from the handle after the transfer),
  with ``"ssl": true, "url"`` (the effective URL) when its final
  response came over TLS, or ``{"i", "t_ns", "skipped"}`` (no ``stamps_us``) the moment a
  turn is skipped: a request that hangs until the run ends still shows in
  the skipped count. The process exits 0 once every URL made ``count``
  requests.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from typing import Any

from probetop.probes.http.curlinfo import content_length, printable, read_info
from probetop.probes.http.errorkinds import error_kind
from probetop.probes.http.request import HttpRequest, configure


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM us if the parent dies, so no worker is ever orphaned."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class _Target:
    """One URL's handle and schedule."""

    def __init__(self, index: int, url: str, handle: Any, slot_centre_ns: int) -> None:
        self.index = index
        self.url = url
        self.handle = handle
        self.centre_ns = slot_centre_ns  # this URL's slot centre on the tick grid
        self.due_ns = slot_centre_ns
        self.done = 0
        self.busy = False
        self.skipped = 0


def run(config: dict[str, Any], out: Any) -> int:
    import pycurl

    urls: list[str] = config["urls"]
    request = HttpRequest.from_dict(config["request"])
    interval_ns = int(float(config["interval_s"]) * 1e9)
    count = config.get("count")
    fresh = bool(config.get("fresh", True))
    multi = pycurl.CurlMulti()
    # CLOCK_MONOTONIC is system-wide, so the parent's tick grid is ours too.
    origin = int(config.get("origin_ns") or time.monotonic_ns())
    targets = []
    for i, url in enumerate(urls):
        handle = pycurl.Curl()
        handle.target_index = i  # type: ignore[attr-defined]
        offset = (2 * i + 1) * interval_ns // (2 * max(1, len(urls)))
        targets.append(_Target(i, url, handle, origin + offset))
    # Random jitter around each slot centre (uniform, +-jitter/2 of the slot,
    # default +-25 %): a sampler at a fixed phase can alias with periodic
    # activity on the host (other monitors' 1 s ticks, timers) and report it as
    # a steady offset; jitter spreads requests over the phases, and stays
    # inside the slot, so never on a tick.
    half_range = float(config.get("jitter", 0.5)) * interval_ns / (2 * max(1, len(urls)))
    rng = random.Random()

    def schedule(target: _Target, now: int) -> int:
        """Move ``target`` to its next turn, past turns already missed; the
        number of turns that came (the one due and any missed since)."""
        came = 1
        target.centre_ns += interval_ns
        while target.centre_ns + half_range <= now:
            target.centre_ns += interval_ns
            came += 1
        target.due_ns = target.centre_ns + int(rng.uniform(-half_range, half_range))
        return came

    for target in targets:
        target.due_ns = target.centre_ns + int(rng.uniform(-half_range, half_range))
    running = 0

    def finished(target: _Target, errno: int, message: str) -> None:
        info = read_info(target.handle)
        # blackbox_exporter's probe_http_ssl: the final response came over TLS.
        url = str(info["effective_url"] or "")
        ssl = bool(info["http_code"]) and url.startswith("https:")
        kind = error_kind(errno, target.url) if errno else None
        line = {
            "i": target.index,
            "t_ns": time.monotonic_ns(),
            "stamps_us": info["_us"],
            "http_code": info["http_code"],
            "http_version": info["_http_version"],
            "error": kind,
            "message": printable(str(message)) if errno else None,
            "curl_code": int(errno),
            "size_download": info["size_download"],
            "num_connects": info["num_connects"],
            "redirect_count": info["redirect_count"],
            "content_length": content_length(target.handle),
            "body_bytes": None if request.compressed else info["size_download"],
            "primary_ip": info["primary_ip"] or "",
            "skipped": target.skipped,
        }
        if ssl:  # the probe looks its TLS session up apart (HttpProbe)
            line.update(ssl=True, url=url)
        out.write(json.dumps(line, separators=(",", ":")) + "\n")
        out.flush()

    while True:
        now = time.monotonic_ns()
        for target in targets:
            if count is not None and target.done >= count:
                continue
            if target.due_ns > now:
                continue
            came = schedule(target, now)
            if target.busy:
                # Every turn that came while the request ran, also those this
                # loop woke too late for (a loaded machine): each was skipped.
                target.skipped += came
                # Said now, not with the next finished request: that one may
                # never finish before the run ends.
                turn = {"i": target.index, "t_ns": now, "skipped": target.skipped}
                out.write(json.dumps(turn, separators=(",", ":")) + "\n")
                out.flush()
                continue
            handle = target.handle
            handle.reset()
            # Fresh connections stay open past libcurl's total stamp and
            # are closed below, once no transfer is timing (configure).
            configure(handle, request, target.url, fresh=fresh, keep_open=fresh)
            handle.setopt(pycurl.WRITEFUNCTION, _discard)
            if request.follow:
                # Repeated mode lets libcurl follow redirects: its stamps then add
                # up over hops, exactly as curl -L -w reports them.
                handle.setopt(pycurl.FOLLOWLOCATION, 1)
                handle.setopt(pycurl.MAXREDIRS, request.max_redirs)
            target.busy = True
            target.done += 1
            running += 1
            multi.add_handle(handle)
        if running:
            while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                pass
            while True:
                queued, ok, failed = multi.info_read()
                for handle in ok:
                    multi.remove_handle(handle)
                    target = targets[handle.target_index]
                    target.busy, running = False, running - 1
                    finished(target, 0, "")
                for handle, errno, message in failed:
                    multi.remove_handle(handle)
                    target = targets[handle.target_index]
                    target.busy, running = False, running - 1
                    finished(target, errno, message)
                if not queued:
                    break
            if fresh and not running:
                # Close the finished requests' connections now, with no
                # transfer timing: a new multi handle, an empty pool. While
                # some transfer is always running, libcurl bounds the pool
                # (4 connections per handle) and closes the oldest at a
                # transfer's end, inside its total, as FORBID_REUSE would.
                multi.close()
                multi = pycurl.CurlMulti()
        pending = [t for t in targets if count is None or t.done < count]
        if not pending and not running:
            return 0
        now = time.monotonic_ns()
        next_due_ns = min((t.due_ns for t in pending), default=now + interval_ns)
        wait_s = max(0.0, (next_due_ns - now) / 1e9)
        if running:
            curl_timeout = multi.timeout()
            if curl_timeout >= 0:
                wait_s = min(wait_s, curl_timeout / 1000.0)
            multi.select(min(wait_s, 1.0))
        elif wait_s > 0:
            time.sleep(wait_s)


def _discard(data: bytes) -> None:
    return None


def main() -> int:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    line = sys.stdin.readline()
    if not line:
        return 2
    config = json.loads(line)
    try:
        return run(config, sys.stdout)
    except BrokenPipeError:
        # The parent went away; nothing is left to report to.
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
