"""The load generator: a worker process sending requests on a fixed schedule
through one libcurl multi handle (open model, coordinated omission corrected).

Run as ``python -m probetop.probes.http.load.generator``; the parent
(``probe.HttpLoadProbe``) writes one JSON line of configuration to stdin
and reads one JSON line per interval (aggregates, never one line per request)
from stdout.

Why a process: the same reason as repeated mode's ``http/worker.py``: libcurl stamps socket
events when ``curl_multi_perform`` runs, and in the dashboard's process that
call would first wait for the GIL. Here nothing else runs.

The model (wrk2's, with one shared queue instead of a schedule per
connection):
- Request k is *scheduled* at ``start + k / rate``, whatever happened to
  earlier requests. At most ``connections`` requests are in flight (one
  libcurl easy handle each, configured once and reused, so keep-alive
  connections are reused as a client's would be).
- A request whose time has come starts at once on a free handle; when every
  handle is busy it waits (in order) for the first one to free: a slow server
  then delays what users would send, and that wait is part of its latency.
- ``corrected`` latency = (start - scheduled) + libcurl's total time: what a
  user arriving on schedule would have waited (the coordinated-omission
  correction of wrk2 and HdrHistogram). ``service`` latency = libcurl's total
  time alone (what wrk, ab and a closed loop report).
- ``gen_lag`` = start - max(scheduled, the moment a handle was free): the
  generator's own lateness. It is in the corrected latency but is not the
  server's. ``busy`` is the share of the interval the loop did not wait
  (in select or sleep): near 1 the generator has no time left to notice
  responses and send on time (whether its CPU ran out or the machine did
  not give it one). When either grows the parent flags the interval as
  generator-limited. ``run_wait`` is the share of the interval the process
  was runnable but waiting for a CPU (the kernel's run-queue delay,
  /proc/self/schedstat): a starved generator sleeps in no call of its own,
  so neither ``busy`` nor ``gen_lag`` sees it, but the kernel does.

Contract:
- Config: ``{"url", "request": HttpRequest.to_dict(), "rate": R or null,
  "connections": C, "time_s": S or null (until SIGTERM), "interval_s": I,
  "fresh": bool, "drain_s": grace for requests in flight after the schedule
  ends (default 1)}``. ``rate`` null is wrk's closed loop: every free
  connection sends its next request at once (scheduled = sent, so the
  corrected latency is the service latency and nothing is ever late).
- The run ends at ``time_s``: nothing is sent at or after it (wrk2 stops
  sending at ``-d``), and one line closes the run's own time exactly there.
  Requests due within the run but not sent by then (every handle was busy,
  or the generator fell behind) are never sent: they are ``unsent``. The
  requests still in flight get ``drain_s`` more to finish, reported in lines
  with ``"drain": true`` (``sent`` 0 in them), so a rate over the run divides
  by the run's time, as wrk does, not by the drain after it.
- Every ``interval_s`` (from the schedule's start) one line: ``{"t_ns",
  "seconds", "scheduled", "sent", "done", "classes": {class: {"corrected":
  hist, "service": hist}}, "phases": {phase: hist}, "errors": {kind: n},
  "codes": {code: n}, "in_flight_max", "in_flight_mean", "backlog",
  "waited", "gen_lag": hist, "connects", "busy" (share of the interval the
  loop was not waiting), "run_wait" (share waiting for a CPU, or null where
  the kernel does not keep schedstat), "cpu_s", "final", "unfinished",
  "unsent", "last_error", "drain", "last_sent_s", "req_per_s": hist}`` with
  histograms in ``Histogram.to_list`` form (microseconds; ``req_per_s``
  holds responses/s: wrk's record_rate samples, one every 100 ms of the run,
  taken in the interval). The last line has ``"final": true``; ``unfinished`` are
  requests still in flight then, ``unsent`` requests due but never sent.
  ``last_sent_s``: when the run's latest request so far was sent, in
  seconds from the schedule's start (null before the first); it is below
  ``time_s`` by construction.
- SIGTERM ends the run within ~50 ms with a final line; SIGINT is ignored
  (the parent decides). The process exits 0.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from typing import Any

from probetop.probes.http.closing import DeferredClose
from probetop.probes.http.curlinfo import printable
from probetop.probes.http.errorkinds import error_kind, status_kind
from probetop.probes.http.load.hist import Histogram
from probetop.probes.http.request import HttpRequest, configure
from probetop.probes.http.status import StatusClass, classify
from probetop.probes.http.transfer import PHASES, phases_us

# Longest sleep of the loop: how soon a SIGTERM is noticed.
MAX_WAIT_S = 0.05
# wrk's RECORD_INTERVAL_MS (src/wrk.h): how often its record_rate samples a
# thread's responses/s, the samples of its Thread Stats Req/Sec row.
RECORD_INTERVAL_NS = 100_000_000


class _Interval:
    """What one reporting interval accumulates."""

    def __init__(self, t0_ns: int, in_flight: int) -> None:
        self.t0_ns = t0_ns
        self.sent = 0
        self.done = 0
        self.classes: dict[str, tuple[Histogram, Histogram]] = {}
        self.phases = {phase: Histogram() for phase in PHASES}
        self.errors: dict[str, int] = {}
        self.codes: dict[int, int] = {}
        self.in_flight_max = in_flight
        self.flight_area = 0  # sum of in_flight x ns
        self.waited = 0
        self.gen_lag = Histogram()
        self.connects = 0
        self.bytes = 0  # headers and bodies read (wrk's "X MB read")
        self.last_error: str | None = None
        self.idle_ns = 0  # time spent waiting (select/sleep): the rest the loop was busy
        self.rates = Histogram()  # wrk's record_rate samples (responses/s) taken in it

    def to_dict(self, now_ns: int, scheduled: int, backlog: int) -> dict[str, Any]:
        seconds = max(1e-9, (now_ns - self.t0_ns) / 1e9)
        return {
            "t_ns": now_ns,
            "seconds": seconds,
            "scheduled": scheduled,
            "sent": self.sent,
            "done": self.done,
            "classes": {
                name: {"corrected": corr.to_list(), "service": svc.to_list()}
                for name, (corr, svc) in self.classes.items()
            },
            "phases": {name: hist.to_list() for name, hist in self.phases.items() if hist.count},
            "errors": self.errors,
            "codes": {str(code): n for code, n in sorted(self.codes.items())},
            "in_flight_max": self.in_flight_max,
            "in_flight_mean": self.flight_area / 1e9 / seconds,
            "backlog": backlog,
            "waited": self.waited,
            "gen_lag": self.gen_lag.to_list(),
            "connects": self.connects,
            "bytes": self.bytes,
            "busy": max(0.0, 1.0 - self.idle_ns / 1e9 / seconds),
            "last_error": self.last_error,
            "req_per_s": self.rates.to_list(),
        }


#: Which libcurl counter gives each stamp (integer microseconds from the
#: start of the transfer); phases_us turns them into phases.
STAMP_INFO: tuple[tuple[str, str], ...] = (
    ("namelookup", "NAMELOOKUP_TIME_T"),
    ("connect", "CONNECT_TIME_T"),
    ("appconnect", "APPCONNECT_TIME_T"),
    ("pretransfer", "PRETRANSFER_TIME_T"),
    ("starttransfer", "STARTTRANSFER_TIME_T"),
    ("total", "TOTAL_TIME_T"),
)


def info(handle: Any, option: int) -> int:
    """One integer getinfo value of a finished handle; 0 when libcurl has none."""
    import pycurl

    try:
        return int(handle.getinfo(option) or 0)
    except (pycurl.error, TypeError, ValueError):
        return 0


def read_stamps(handle: Any) -> dict[str, int]:
    """The six cumulative stamps (us) of a finished transfer, by name."""
    import pycurl

    return {name: info(handle, getattr(pycurl, option)) for name, option in STAMP_INFO}


def account(
    interval: _Interval,
    stamps: dict[str, int],
    *,
    code: int,
    kind: str | None,
    message: str,
    waited_us: int,
    connects: int,
    size: int = 0,
) -> None:
    """Count one finished request into ``interval``: its latency by status
    class (corrected = ``waited_us`` from its scheduled time to its start,
    plus libcurl's total; service = the total alone), its status code, its
    error kind, and for a success its phases from ``stamps``."""
    outcome = classify(code, kind).value
    hists = interval.classes.get(outcome)
    if hists is None:
        hists = interval.classes[outcome] = (Histogram(), Histogram())
    service_us = stamps["total"]
    hists[0].record(waited_us + service_us)
    hists[1].record(service_us)
    interval.done += 1
    interval.connects += connects
    interval.bytes += size
    if code:
        interval.codes[code] = interval.codes.get(code, 0) + 1
    counted = kind or status_kind(code)  # error kinds as repeated mode counts them
    if counted:
        interval.errors[counted] = interval.errors.get(counted, 0) + 1
        interval.last_error = printable(str(message))[:200] if kind else f"HTTP {code}"
    # Phases are the successes' (docs/http-load.md, as repeated mode): a
    # fast 500 must not make the server phase look quick.
    if outcome == StatusClass.SUCCESS.value:
        for phase, us in phases_us(stamps, failed=None, got_response=True).items():
            if us is not None:
                interval.phases[phase].record(us)


def run_delay_ns() -> int | None:
    """The kernel's run-queue delay of this thread so far (ns), or None when
    /proc/self/schedstat is missing (a kernel without CONFIG_SCHED_INFO)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def run(config: dict[str, Any], out: Any, stop: list[bool]) -> int:
    import pycurl

    url: str = config["url"]
    request = HttpRequest.from_dict(config["request"])
    closed = config.get("rate") is None  # wrk's closed loop (--connections without --rate)
    rate = 1.0 if closed else float(config["rate"])
    connections = int(config["connections"])
    time_s = config.get("time_s")
    interval_ns = int(float(config.get("interval_s", 1.0)) * 1e9)
    fresh = bool(config.get("fresh", False))
    drain_ns = int(float(config.get("drain_s", 1.0)) * 1e9)
    period_ns = 1e9 / rate
    # Requests in the schedule (closed loop: as many as the connections manage).
    total = math.ceil(float(time_s) * rate) if time_s and not closed else None

    multi = pycurl.CurlMulti()
    closer = DeferredClose()
    idle = [new_handle(request, url, fresh=fresh, closer=closer) for _ in range(connections)]

    response_code, num_connects = pycurl.RESPONSE_CODE, pycurl.NUM_CONNECTS
    size_download, header_size = pycurl.SIZE_DOWNLOAD_T, pycurl.HEADER_SIZE

    start_ns = time.monotonic_ns() + 1_000_000  # the schedule's origin
    end_ns = start_ns + int(float(time_s) * 1e9) if time_s else None

    def scheduled_at(k: int) -> int:
        return start_ns + int(k * period_ns)

    def due_by(t_ns: int) -> int:
        """How many requests are scheduled at or before ``t_ns`` (closed
        loop: those sent; each is due when it is sent)."""
        if closed:
            return next_k
        if t_ns < start_ns:
            return 0
        n = int((t_ns - start_ns) / period_ns) + 1
        while n > 0 and scheduled_at(n - 1) > t_ns:  # float rounding at the edge
            n -= 1
        while scheduled_at(n) <= t_ns:
            n += 1
        return n if total is None else min(n, total)

    next_k = 0  # the next request to send
    running = 0
    last_change_ns = start_ns
    cpu0 = time.process_time()
    delay0 = run_delay_ns()
    report_ns = start_ns + interval_ns
    interval = _Interval(start_ns, 0)
    due_reported = 0
    ended = False  # the run's time is over: nothing more is sent, the rest is drain
    last_sent_ns: int | None = None  # when the latest request was sent
    # wrk's record_rate: responses since the last sample, and when that was.
    rate_responses = 0
    rate_start_ns = start_ns
    rate_next_ns = start_ns + RECORD_INTERVAL_NS

    def record_rate(now_ns: int) -> None:
        """wrk 4.1's record_rate (src/wrk.c): with responses since the last
        sample, record responses / whole elapsed ms x 1000, truncated, and
        start the next window; with none, the window runs on."""
        nonlocal rate_responses, rate_start_ns
        if rate_responses > 0:
            elapsed_ms = (now_ns - rate_start_ns) // 1_000_000
            if elapsed_ms > 0:
                interval.rates.record(int(rate_responses / elapsed_ms * 1000))
            rate_responses = 0
            rate_start_ns = now_ns

    def flush(now_ns: int, *, final: bool) -> None:
        nonlocal interval, due_reported, cpu0, last_change_ns, delay0
        interval.flight_area += running * (now_ns - last_change_ns)
        last_change_ns = now_ns
        due = due_by(min(now_ns, end_ns) if end_ns is not None else now_ns)
        doc = interval.to_dict(now_ns, due - due_reported, due - next_k)
        cpu = time.process_time()
        doc["cpu_s"] = cpu - cpu0
        delay = run_delay_ns()
        doc["run_wait"] = (
            None if delay is None or delay0 is None else (delay - delay0) / 1e9 / doc["seconds"]
        )
        delay0 = delay
        doc["final"] = final
        doc["drain"] = ended and interval.t0_ns >= end_ns if end_ns is not None else False
        doc["unfinished"] = running if final else 0
        doc["unsent"] = due - next_k if final else 0
        doc["last_sent_s"] = None if last_sent_ns is None else (last_sent_ns - start_ns) / 1e9
        out.write(json.dumps(doc, separators=(",", ":")) + "\n")
        out.flush()
        cpu0 = cpu
        due_reported = due
        interval = _Interval(now_ns, running)

    def finished(handle: Any, errno: int, message: str) -> None:
        nonlocal running, last_change_ns, rate_responses
        now = time.monotonic_ns()
        if not errno and not ended:  # wrk counts responses (any status), not socket errors
            rate_responses += 1
        multi.remove_handle(handle)
        interval.flight_area += running * (now - last_change_ns)
        last_change_ns = now
        running -= 1
        handle.free_ns = now
        idle.append(handle)
        account(
            interval,
            read_stamps(handle),
            code=info(handle, response_code),
            kind=error_kind(errno, url) if errno else None,
            message=message,
            waited_us=(handle.start_ns - handle.sched_ns) // 1000,
            connects=info(handle, num_connects),
            size=info(handle, size_download) + info(handle, header_size),
        )

    def collect() -> None:
        """Let libcurl work, then take in every finished transfer."""
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            queued, ok, failed = multi.info_read()
            for handle in ok:
                finished(handle, 0, "")
            for handle, errno, message in failed:
                finished(handle, errno, message)
            if not queued:
                break
        # The finished requests' times are read: their fresh connections
        # can close now, outside every total (closing.py).
        closer.close_pending()

    while True:
        now = time.monotonic_ns()
        if stop[0]:
            flush(now, final=True)
            return 0
        # Free the handles of finished requests first, so a request due now
        # takes a connection that is really free, then start every request
        # whose time has come while a handle is free, and let libcurl send.
        if running:
            collect()
        # Closed loop: every free connection sends at once, until the run is over.
        # Nothing is sent at or after --time (wrk2 stops sending at -d): what is
        # due but not sent by then is unsent.
        if ended or (end_ns is not None and now >= end_ns):
            due = next_k
        else:
            due = next_k + len(idle) if closed else due_by(now)
        if next_k < due and idle:
            interval.flight_area += running * (now - last_change_ns)
            last_change_ns = now
            while next_k < due and idle:
                start = time.monotonic_ns()
                if end_ns is not None and start >= end_ns:
                    break  # the run's time ran out while sending this batch
                handle = idle.pop()
                # Closed loop: a request is due when it is sent (wrk), never late.
                sched = start if closed else scheduled_at(next_k)
                if handle.free_ns > sched:
                    interval.waited += 1  # every handle was busy when it was due
                handle.sched_ns = sched
                handle.start_ns = start
                interval.gen_lag.record((start - max(sched, handle.free_ns)) // 1000)
                multi.add_handle(handle)
                next_k += 1
                running += 1
                interval.sent += 1
                last_sent_ns = start
            interval.in_flight_max = max(interval.in_flight_max, running)
            collect()
        now = time.monotonic_ns()
        if end_ns is not None and now >= end_ns:
            # Only the requests in flight are waited for: those due and not sent
            # yet stay unsent (counted in the final line).
            over = not running or now >= end_ns + drain_ns
            if not ended:
                # The run's own time ends here: one line up to now, the rest is drain.
                record_rate(now)  # wrk's last sample, as its timer sees stop
                ended = True
                flush(now, final=over)
                if over:
                    return 0
                report_ns = now + interval_ns
            elif over:
                flush(now, final=True)
                return 0
        if not ended and now >= rate_next_ns:
            record_rate(now)
            rate_next_ns = now + RECORD_INTERVAL_NS  # ae re-arms the timer from now
        if now >= report_ns:
            flush(now, final=False)
            report_ns += interval_ns
            while report_ns <= now:
                report_ns += interval_ns
        # Sleep until the next request is due (if a handle is free), the next
        # report, or libcurl's own timeout, whichever comes first.
        wake = report_ns if ended else min(report_ns, rate_next_ns)
        if idle and not closed and not ended and (total is None or next_k < total):
            wake = min(wake, scheduled_at(next_k))
        if end_ns is not None:
            wake = min(wake, end_ns + drain_ns)
        wait_s = min(MAX_WAIT_S, max(0.0, (wake - now) / 1e9))
        if running:
            curl_timeout = multi.timeout()
            if curl_timeout >= 0:
                wait_s = min(wait_s, curl_timeout / 1000.0)
            if wait_s > 0:
                t0 = time.monotonic_ns()
                multi.select(wait_s)
                interval.idle_ns += time.monotonic_ns() - t0
        elif wait_s > 0:
            t0 = time.monotonic_ns()
            time.sleep(wait_s)
            interval.idle_ns += time.monotonic_ns() - t0


def new_handle(request: HttpRequest, url: str, *, fresh: bool, closer: DeferredClose) -> Any:
    """One easy handle of the generator, configured once for every request it
    sends. ``fresh``: a new connection per request, closed by libcurl at the
    transfer's end (FORBID_REUSE: no idle pool to bound while requests
    overlap) but with the close(2) left to ``closer``, after the stamps."""
    import pycurl

    handle = pycurl.Curl()
    configure(handle, request, url, fresh=fresh)
    handle.setopt(pycurl.WRITEFUNCTION, _discard)
    if request.follow:
        handle.setopt(pycurl.FOLLOWLOCATION, 1)
        handle.setopt(pycurl.MAXREDIRS, request.max_redirs)
    if fresh:
        closer.install(handle)
    handle.free_ns = 0  # type: ignore[attr-defined]
    return handle


def _discard(data: bytes) -> None:
    return None


def _process_setup() -> None:
    """Ask Linux to SIGTERM us if the parent dies (no worker is ever orphaned),
    and to wake our sleeps on time: the default timer slack (50 us) would
    make every request start up to 50 us late (measured: median generator
    lag 80-90 us with it, see docs/http-load.md)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig, pr_set_timerslack = 1, 29
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
        libc.prctl(pr_set_timerslack, ctypes.c_ulong(1000))  # 1 us
    except (OSError, AttributeError):
        pass


def main() -> int:
    _process_setup()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    stop = [False]

    def on_term(_signum: int, _frame: Any) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_term)
    line = sys.stdin.readline()
    if not line:
        return 2
    config = json.loads(line)
    try:
        return run(config, sys.stdout, stop)
    except BrokenPipeError:
        os._exit(0)  # the parent went away; nothing is left to report to


if __name__ == "__main__":
    sys.exit(main())
