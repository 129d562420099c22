"""probetop's exposition against the exporters whose names it follows.

The stored scrapes (tests/metrics/data/, README there) are laid out from
smokeping_prober 0.11.0's and blackbox_exporter 0.28.0's metric definitions.
A live probetop run is scraped after its run ended (``--metrics-linger``)
and compared family by family: every reference family probetop serves has
the same type, every reference label (with the same value, for the target),
and only probetop's ``probe`` (and ``url`` for HTTP) beside them; ICMP's
smokeping families have smokeping's samples, label names and bounds exactly.
"""

from __future__ import annotations

import calendar
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from metrics_fixtures import (
    PROBETOP,
    LoopbackHttp,
    free_port,
    make_tls_cert,
    parse,
    samples,
    scrape_text,
)
from privilege import needs_icmp
from stopclock import StopClock

DATA = Path(__file__).resolve().parent / "data"
SMOKEPING = DATA / "smokeping_prober_0.11.0.prom"
BLACKBOX = DATA / "blackbox_exporter_0.28.0_http.prom"
BLACKBOX_ICMP = DATA / "blackbox_exporter_icmp.prom"
BLACKBOX_HTTPS = DATA / "blackbox_exporter_https.prom"


def scrape_after_the_end(
    argv: list[str], port: int, linger_s: float, done_marker: str
) -> tuple[str, dict[str, Any], float]:
    """Start probetop; when ``done_marker`` shows in its report, scrape.
    Returns (report, scrape, seconds from the scrape until it exited)."""
    proc = subprocess.Popen(
        [*PROBETOP, *argv, "--metrics", str(port), "--metrics-linger", f"{linger_s:g}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    report = ""
    try:
        for line in proc.stdout:  # the report is flushed before the linger
            report += line
            if done_marker in line:
                break
        else:
            raise AssertionError(f"no {done_marker!r} in:\n{report}\n{proc.stderr.read()}")
        scrape = parse(scrape_text(f"http://127.0.0.1:{port}/metrics"))
        assert proc.poll() is None, "the run ended and its endpoint is still up"
        t0 = time.monotonic()
        rest, err = proc.communicate(timeout=linger_s + 30)
        assert proc.returncode == 0, err
        return report + rest, scrape, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def check_like(
    ours: dict[str, Any], theirs: dict[str, Any], extra_labels: set[str], target: dict[str, str]
) -> set[str]:
    """Every reference family we serve: same type, the reference's label
    names (values equal for ``target``'s), ours add only ``extra_labels``.
    Returns the names of the reference families we serve."""
    served = set()
    for name, ref in theirs.items():
        if name not in ours:
            continue
        served.add(name)
        assert ours[name].type == ref.type, name
        ref_labels = {k for s in ref.samples for k in s.labels}
        for s in ours[name].samples:
            if s.name.endswith("_bucket") != any(r.name.endswith("_bucket") for r in ref.samples):
                continue
            assert ref_labels - {"le"} <= set(s.labels) or not ref_labels - {"le"}, (name, s)
            assert set(s.labels) - ref_labels <= extra_labels, (name, s.labels)
            for key, want in target.items():
                if key in ref_labels:
                    assert s.labels[key] == want, (name, key, s.labels)
        ours_names = {s.name for s in ours[name].samples}
        assert {s.name for s in ref.samples} <= ours_names, name
    return served


@needs_icmp
def test_icmp_exposition_is_smokeping_probers(tmp_path: Path) -> None:
    theirs = parse(SMOKEPING.read_text())
    port = free_port()
    argv = ["icmp", "-q", "-c", "12", "-i", "0.01", "127.0.0.1"]
    report, ours, _waited = scrape_after_the_end(argv, port, 3.0, "rtt min/avg/max/mdev")
    target = {"ip": "127.0.0.1", "host": "127.0.0.1", "source": "", "tos": "0"}
    # Every smokeping family with smokeping's label names and no others (its
    # receive-error counter: none), its types and its default bucket bounds.
    served = check_like(ours, theirs, set(), target)
    assert served == set(theirs)
    for name, ref in theirs.items():  # (client_golang writes _sum before _count)
        assert sorted((s.name, sorted(s.labels)) for s in ours[name].samples) == sorted(
            (s.name, sorted(s.labels)) for s in ref.samples
        ), name
    les = [s.labels["le"] for s in samples(ours, "smokeping_response_duration_seconds_bucket")]
    assert les == [
        s.labels["le"] for s in samples(theirs, "smokeping_response_duration_seconds_bucket")
    ]
    # The last interval was scraped after the run: every request and reply.
    (requests,) = samples(ours, "smokeping_requests_total")
    (count,) = samples(ours, "smokeping_response_duration_seconds_count")
    (ttl,) = samples(ours, "smokeping_response_ttl")
    assert requests.value == 12 == count.value and ttl.value == 64
    (prober_errors,) = samples(ours, "smokeping_prober_errors_total")
    assert prober_errors.value == 0 and prober_errors.labels == {}
    # blackbox_exporter's ICMP families we serve: its types, its labels and
    # ours (smokeping's and probe); no probe_* name of our own invention.
    bb = parse(BLACKBOX_ICMP.read_text())
    ours_bb = check_like(ours, bb, {*target, "probe"}, {})
    assert ours_bb == {n for n in ours if n.startswith("probe_")}
    assert {"probe_success", "probe_icmp_duration_seconds", "probe_icmp_reply_hop_limit"} <= ours_bb
    (hop_limit,) = samples(ours, "probe_icmp_reply_hop_limit")
    assert hop_limit.value == 64
    assert hop_limit.labels == {**target, "probe": hop_limit.labels["probe"]}
    assert "12 packets transmitted, 12 received" in report
    buckets = samples(ours, "smokeping_response_duration_seconds_bucket")
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == 12


# blackbox's response and address series (http.go, utils.go at e39d7d4),
# from the timed requests' libcurl counters, with blackbox's help texts.
RESPONSE_SERIES = {
    "probe_http_content_length",
    "probe_http_uncompressed_body_length",
    "probe_http_redirects",
    "probe_http_version",
    "probe_ip_protocol",
    "probe_ip_addr_hash",
}
LOOPBACK_HASH = 3668918509  # Go: fnv.New32a() over net.ParseIP("127.0.0.1").To4()


def check_response_series(ours: dict[str, Any], theirs: dict[str, Any], url: str) -> None:
    """The loopback fixture's ``ok\n`` over HTTP/1.1 from 127.0.0.1, no redirect."""
    for name in RESPONSE_SERIES:
        assert ours[name].documentation == theirs[name].documentation, name
        (sample,) = samples(ours, name)
        assert sample.labels["url"] == url, (name, sample.labels)
    want = {
        "probe_http_content_length": 3,
        "probe_http_uncompressed_body_length": 3,
        "probe_http_redirects": 0,
        "probe_http_version": 1.1,
        "probe_ip_protocol": 4,
        "probe_ip_addr_hash": LOOPBACK_HASH,
    }
    assert {name: samples(ours, name)[0].value for name in want} == want


def test_http_exposition_is_blackbox_exporters(tmp_path: Path) -> None:
    theirs = parse(BLACKBOX.read_text())
    port = free_port()
    with LoopbackHttp() as site:
        url = f"{site.url}/"
        argv = ["http", url, "--count", "3", "--interval", "0.2", "--json"]
        # The JSON document is printed once the run has ended: its first line.
        _report, ours, _waited = scrape_after_the_end(argv, port, 2.0, "{")
    served = check_like(ours, theirs, {"probe", "url"}, {})
    must = {"probe_success", "probe_duration_seconds", "probe_http_duration_seconds"}
    must |= {"probe_http_status_code", "probe_dns_lookup_time_seconds"}
    assert must | RESPONSE_SERIES <= served
    check_response_series(ours, theirs, url)
    # No probe_* name of our own invention beside blackbox's (ICMP's rtt phase aside).
    assert {n for n in ours if n.startswith("probe_")} <= set(theirs)
    phases = {s.labels["phase"] for s in samples(ours, "probe_http_duration_seconds")}
    ref_phases = {s.labels["phase"] for s in samples(theirs, "probe_http_duration_seconds")}
    assert {"resolve", "connect", "processing", "transfer"} <= phases <= ref_phases
    (code,) = samples(ours, "probe_http_status_code")
    assert code.value == 200 and code.labels["url"] == url
    (ssl,) = samples(ours, "probe_http_ssl")
    assert ssl.value == 0
    # blackbox serves its TLS series only for a response over TLS; the timeout only with -m
    assert not {n for n in ours if n.startswith(("probe_ssl_", "probe_tls_"))}
    assert "probe_timeout_seconds" not in ours


def test_https_exposition_is_blackbox_exporters(tmp_path: Path) -> None:
    """An https target: blackbox's TLS series (prober/http.go, tls.go at
    e39d7d4), with the values the certificate and the session have."""
    theirs = parse(BLACKBOX_HTTPS.read_text())
    cert, key = make_tls_cert(tmp_path)
    not_after = subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-noout", "-enddate"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    expiry = calendar.timegm(time.strptime(not_after, "notAfter=%b %d %H:%M:%S %Y GMT"))
    port = free_port()
    with LoopbackHttp(tls=(cert, key)) as site:
        url = f"{site.url}/"
        argv = ["http", url, "--count", "3", "--interval", "0.2", "--json"]
        argv += ["--cacert", str(cert), "-m", "4.5"]
        _report, ours, _waited = scrape_after_the_end(argv, port, 2.0, "{")
    served = check_like(ours, theirs, {"probe", "url"}, {})
    assert {n for n in ours if n.startswith("probe_")} <= served
    must = {"probe_http_ssl", "probe_ssl_earliest_cert_expiry", "probe_tls_version_info"}
    must |= {"probe_tls_cipher_info", "probe_timeout_seconds"}
    assert must | RESPONSE_SERIES <= served
    check_response_series(ours, theirs, url)
    (ssl,) = samples(ours, "probe_http_ssl")
    assert ssl.value == 1 and ssl.labels["url"] == url
    (earliest,) = samples(ours, "probe_ssl_earliest_cert_expiry")
    assert earliest.value == expiry
    (version,) = samples(ours, "probe_tls_version_info")
    assert version.value == 1 and version.labels["version"] == "TLS 1.3"
    (cipher,) = samples(ours, "probe_tls_cipher_info")
    assert cipher.value == 1 and cipher.labels["cipher"].startswith("TLS_")
    (timeout,) = samples(ours, "probe_timeout_seconds")
    assert timeout.value == 4.5
    (tls_phase,) = [
        s for s in samples(ours, "probe_http_duration_seconds") if s.labels["phase"] == "tls"
    ]
    assert tls_phase.value > 0


@needs_icmp
def test_linger_ends_at_once_on_a_signal() -> None:
    port = free_port()
    argv = ["icmp", "-q", "-c", "2", "-i", "0.01", "127.0.0.1"]
    proc = subprocess.Popen(
        [*PROBETOP, *argv, "--metrics", str(port), "--metrics-linger", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("rtt min/avg/max/mdev"):
            break
    scrape_text(f"http://127.0.0.1:{port}/metrics")  # still served
    clock = StopClock(proc.pid).start()  # its own stop time, not the machine's load
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    took = clock.stop()
    assert took.own_s < 2.0 and proc.returncode == 0, str(took)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metrics-linger", "5"], "give --metrics"),
        (["--metrics", "0", "--metrics-linger", "7200"], "--metrics-linger must be within"),
        (["--metrics", "0", "--metrics-linger", "-1"], "--metrics-linger"),
    ],
)
def test_linger_needs_metrics_and_a_sane_time(args: list[str], message: str) -> None:
    r = subprocess.run(
        [*PROBETOP, "cpu", "--time", "0.2", "--headless", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
