"""blackbox_exporter's response and address series of the http probe
(``probe_http_content_length``, ``_uncompressed_body_length``,
``_redirects``, ``_version``, ``probe_ip_protocol``, ``probe_ip_addr_hash``):
read by the sampling worker from libcurl after each transfer, carried in the
interval records (and so in recordings), served by the tracker.
"""

from __future__ import annotations

import io
import json
import socket
import threading
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from http_fixtures import Handler, LocalServer
from probetop.probes.core.sample import Sample
from probetop.probes.http.metrics import HttpTracker
from probetop.probes.http.records import HttpInterval, ResponseFacts, UrlInterval
from probetop.probes.http.request import HttpRequest
from probetop.probes.http.worker import run
from probetop.probes.record.codec import decode_record, dump_line, encode_record


def fnv32a(data: bytes) -> int:
    """FNV-1a, 32 bits (Go's hash/fnv New32a), written out apart from probetop's."""
    h = 2166136261
    for b in data:
        h ^= b
        h = (h * 16777619) % 2**32
    return h


def worker_lines(urls: list[str], request: HttpRequest) -> list[dict[str, Any]]:
    out = io.StringIO()
    config = {"urls": urls, "request": request.to_dict(), "interval_s": 0.05, "count": 1}
    assert run(config, out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return sorted((line for line in lines if "stamps_us" in line), key=lambda d: d["i"])


def scrape(interval: HttpInterval) -> dict[str, float]:
    """The tracker's series of one URL, by name (after a recording's round trip)."""
    line = json.loads(dump_line(encode_record(interval.to_sample("web", 1, 1.0), 0)))
    decoded = decode_record(line)
    assert isinstance(decoded, Sample)
    again = HttpInterval.from_sample(decoded)
    tracker = HttpTracker("web", {})
    tracker.observe(again.to_sample("web", 1, 1.0))
    return {p.metric.name: p.value for p in tracker.points() if isinstance(p.value, float)}


def test_worker_reads_the_final_responses_counters() -> None:
    with LocalServer() as site:
        urls = [
            f"{site.url}/bytes?n=1234",
            f"{site.url}/redirect?n=3&to=/bytes%3Fn%3D10",
            f"{site.url}/close",
        ]
        plain, chain, empty = worker_lines(urls, HttpRequest(follow=True))
    assert plain["content_length"] == 1234 == plain["body_bytes"]
    assert plain["redirect_count"] == 0 and plain["http_version"] == "1.1"
    assert plain["primary_ip"] == "127.0.0.1"
    # -L: three redirects followed, the final response's length
    assert chain["redirect_count"] == 3 and chain["http_code"] == 200
    assert chain["content_length"] == 10 == chain["body_bytes"]
    # no response at all: libcurl has no length (-1); the records make it Go's 0
    assert empty["http_code"] == 0 and empty["content_length"] == -1


def test_compressed_transfers_leave_the_uncompressed_length_unknown() -> None:
    with LocalServer() as site:
        (line,) = worker_lines([f"{site.url}/bytes?n=100"], HttpRequest(compressed=True))
    assert line["content_length"] == 100 and line["body_bytes"] is None


def test_series_values_through_a_recording() -> None:
    facts = ResponseFacts(1234, 1234, redirects=3, http_version="1.1", primary_ip="127.0.0.1")
    url = UrlInterval("u", total_ms=1.0, http_code=200, requests=1, response=facts)
    got = scrape(HttpInterval(urls=(url,), requests=1, errors=0))
    assert got["probe_http_content_length"] == 1234
    assert got["probe_http_uncompressed_body_length"] == 1234
    assert got["probe_http_redirects"] == 3
    assert got["probe_http_version"] == 1.1
    assert got["probe_ip_protocol"] == 4
    assert got["probe_ip_addr_hash"] == fnv32a(socket.inet_pton(socket.AF_INET, "127.0.0.1"))
    assert got["probe_ip_addr_hash"] == 3668918509  # Go: fnv.New32a() over To4()


@pytest.mark.parametrize(
    ("ip", "protocol", "packed"),
    [
        ("::1", 6, socket.inet_pton(socket.AF_INET6, "::1")),
        ("2001:db8::7", 6, socket.inet_pton(socket.AF_INET6, "2001:db8::7")),
        ("::ffff:10.0.0.1", 4, socket.inet_pton(socket.AF_INET, "10.0.0.1")),  # Go's To4()
        ("", 0, None),  # no connection: blackbox's unset gauges
    ],
)
def test_address_series(ip: str, protocol: int, packed: bytes | None) -> None:
    facts = ResponseFacts(content_length=0, body_bytes=0, http_version="2", primary_ip=ip)
    url = UrlInterval("u", http_code=200, requests=1, response=facts)
    got = scrape(HttpInterval(urls=(url,), requests=1, errors=0))
    assert got["probe_ip_protocol"] == protocol
    assert got["probe_ip_addr_hash"] == (fnv32a(packed) if packed else 0)
    assert got["probe_http_version"] == 2


def test_an_older_recording_serves_none_of_them() -> None:
    url = UrlInterval("u", total_ms=1.0, http_code=200, requests=1)
    sample = HttpInterval(urls=(url,), requests=1, errors=0).to_sample("web", 1, 1.0)
    assert "response" not in (sample.extra or {})
    got = scrape(HttpInterval.from_sample(sample))
    assert got["probe_http_status_code"] == 200
    assert not {n for n in got if n.startswith(("probe_ip_", "probe_http_version"))}
    assert "probe_http_content_length" not in got and "probe_http_redirects" not in got


def test_unknown_body_length_is_not_served() -> None:
    facts = ResponseFacts(content_length=-1, body_bytes=None, http_version="1.1")
    url = UrlInterval("u", http_code=200, requests=1, response=facts)
    got = scrape(HttpInterval(urls=(url,), requests=1, errors=0))
    assert got["probe_http_content_length"] == -1  # Go's ContentLength without the header
    assert "probe_http_uncompressed_body_length" not in got


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True


def test_ipv6_loopback() -> None:
    try:
        httpd = _Server6(("::1", 0), Handler)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        (line,) = worker_lines([f"http://[::1]:{httpd.server_address[1]}/bytes?n=7"], HttpRequest())
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
    assert line["primary_ip"] == "::1" and line["content_length"] == 7
    facts = ResponseFacts(content_length=7, body_bytes=7, primary_ip=line["primary_ip"])
    url = UrlInterval("u", http_code=200, requests=1, response=facts)
    got = scrape(HttpInterval(urls=(url,), requests=1, errors=0))
    assert got["probe_ip_protocol"] == 6
    assert got["probe_ip_addr_hash"] == fnv32a(bytes(15) + b"\x01")


def test_a_request_without_a_response_reads_as_gos_empty_response() -> None:
    from probetop.probes.http.probe import _response

    line = {"http_code": 0, "http_version": None, "content_length": -1, "body_bytes": 0}
    line |= {"redirect_count": 0, "primary_ip": ""}
    assert _response(line) == ResponseFacts(content_length=0, body_bytes=0, primary_ip="")
    assert _response({"http_code": 200}) is None  # a worker line without them
