"""Real servers and HTTP versions: nginx (HTTP/1.1 and HTTP/2 over TLS), HTTP/3 (aioquic)."""

from __future__ import annotations

import json

import pytest
from http_fixtures import NginxServer, QuicServer, make_cert
from probetop.probes.http import HttpProbe, HttpRequest, HttpSettings, fetch
from probetop.tui.main import main
from probetop.tui.run.runner import run_headless


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("cert"))


@pytest.fixture(scope="module")
def nginx(tmp_path_factory, cert):
    with NginxServer(tmp_path_factory.mktemp("nginx"), *cert) as srv:
        yield srv


def test_nginx_http11_plain(nginx, capsys):
    code = main(["http", "--json", f"http://127.0.0.1:{nginx.plain_port}/index.html"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["http_code"] == 200 and doc["probetop"]["http_version"] == "1.1"
    assert doc["size_download"] == len("hello from nginx\n")


def test_nginx_http2_over_tls(nginx, cert, capsys):
    url = f"https://127.0.0.1:{nginx.port}/big.bin"
    code = main(["http", "--json", "--http2", "--cacert", str(cert[0]), url])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc["probetop"]["error_message"]
    assert doc["probetop"]["http_version"] == "2"
    assert doc["probetop"]["phases_us"]["tls"] > 0 and doc["probetop"]["tls"]["version"].startswith(
        "TLSv1."
    )
    assert doc["size_download"] == 1_000_000
    assert doc["probetop"]["phases_us"]["transfer"] > 0


def test_nginx_redirect_hops_and_repeated_reuse(nginx, cert):
    req = HttpRequest(follow=True, cacert=str(cert[0]), http_version="2")
    ex = fetch(req, f"https://127.0.0.1:{nginx.port}/moved")
    assert [h.http_code for h in ex.hops] == [301, 200]
    assert ex.hops[1].info["num_connects"] == 0  # the second hop reuses the h2 connection
    assert ex.hops[1].phases_us["tls"] == 0 and ex.hops[0].phases_us["tls"] > 0


async def test_nginx_h2_repeated_with_reuse(nginx, cert):
    req = HttpRequest(cacert=str(cert[0]), http_version="2")
    probe = HttpProbe(
        HttpSettings(
            urls=(f"https://127.0.0.1:{nginx.port}/index.html",),
            request=req,
            interval_s=0.05,
            count=5,
            fresh=False,
        )
    )
    result = await run_headless([probe], duration_s=20)
    stats = next(iter(result.summaries[probe.id]["urls"].values()))
    assert stats["http_codes"] == {"200": 5} and stats["errors"] == {}
    tls = stats["phases_ms"]["tls"]
    assert tls["max"] > 0 and tls["min"] == 0  # one handshake, then a warm connection


def test_http3_against_a_local_quic_server(cert, capsys):
    with QuicServer(*cert, delay_ms=20) as h3:
        code = main(["http", "--json", "--http3", "--cacert", str(cert[0]), f"{h3.url}/"])
        doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc["probetop"]["error_message"]
    assert doc["probetop"]["http_version"] == "3"
    phases = doc["probetop"]["phases_us"]
    assert phases["server"] >= 20_000  # the server's 20 ms wait, measured over QUIC
    assert doc["appconnect_time"] > 0  # the QUIC handshake (TLS 1.3 inside QUIC)
