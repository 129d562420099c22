"""One-off `probetop http`: waterfall, pycurlb JSON, curl option semantics, exit codes.

Everything runs against servers on 127.0.0.1 started here (tests/http_fixtures.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from http_fixtures import LocalServer, make_cert
from probetop.probes.http import PHASES, HttpRequest, fetch
from probetop.probes.http.transfer import phases_us
from probetop.tui.cli.parser import build_parser, make_plan
from probetop.tui.main import main


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("cert"))


@pytest.fixture(scope="module")
def tls_server(cert):
    with LocalServer(tls=cert) as srv:
        yield srv


def request_of(*args: str) -> HttpRequest:
    """The request `probetop http ARGS` would send (parsed and planned as the CLI does)."""
    plan = make_plan(build_parser().parse_args(["http", *args]))
    return plan.settings.request


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["http", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


# -- phase maths ------------------------------------------------------------
def test_phases_from_cumulative_stamps():
    stamps = {
        "namelookup": 100,
        "connect": 300,
        "appconnect": 1300,
        "pretransfer": 1350,
        "starttransfer": 21350,
        "total": 22000,
    }
    assert phases_us(stamps) == {
        "dns": 100,
        "tcp": 200,
        "tls": 1000,
        "server": 20000,
        "transfer": 650,
    }
    # Plain http: no appconnect stamp, so no TLS phase.
    plain = dict(stamps, appconnect=0)
    assert phases_us(plain)["tls"] == 0
    # A refused connection: DNS happened, nothing after it did.
    refused = phases_us(dict(stamps, connect=0, appconnect=0), failed="refused")
    assert refused["dns"] == 100 and refused["tcp"] is None and refused["server"] is None


def test_server_phase_is_the_servers_wait(server):
    servers = []
    for _ in range(5):
        exchange = fetch(HttpRequest(), f"{server.url}/delay?ms=50")
        hop = exchange.final
        assert exchange.error is None and hop.http_code == 200
        phases = hop.phases_us
        assert phases["server"] >= 50_000  # never less than the server's own wait
        servers.append(phases["server"])
        # libcurl's stamps are cumulative and ordered; phases add up to total
        # minus the tiny pretransfer gap (request setup after connect).
        s = hop.stamps_us
        assert s["namelookup"] <= s["connect"] <= s["pretransfer"] <= s["starttransfer"]
        assert s["starttransfer"] <= s["total"]
        gap = s["pretransfer"] - s["connect"]
        assert sum(phases[p] for p in PHASES) + gap == s["total"]
    # Nothing else in it (a connect, a 40 ms delayed ACK): the best of five,
    # since a loaded machine delays any one exchange (225 ms seen at load 40).
    assert min(servers) < 90_000, servers


# -- output -----------------------------------------------------------------
def test_waterfall_is_plain_when_piped(server, capsys):
    code = main(["http", f"{server.url}/delay?ms=5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "\x1b[" not in out
    for word in ("DNS", "TCP", "TLS", "server", "transfer", "HTTP/1.1 200 OK", "starttransfer"):
        assert word in out
    assert f"127.0.0.1:{server.port}" in out  # remote address
    assert " ms" in out and "local 127.0.0.1:" in out


def test_waterfall_colours_on_a_terminal_unless_no_color(server):
    from probetop.probes.http import fetch as do_fetch
    from probetop.probes.http import render_exchange

    exchange = do_fetch(HttpRequest(), f"{server.url}/")
    assert "\x1b[" in render_exchange(exchange, colour=True)
    env = dict(os.environ, NO_COLOR="1")
    script = (
        "import sys, probetop.probes.http.waterfall as w\n"
        "class T:\n    def isatty(self): return True\n"
        "print(w.use_colour(T()))"
    )
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_json_has_pycurlb_keys_and_meanings(server, capsys):
    code, doc = run_json(capsys, f"{server.url}/delay?ms=20")
    assert code == 0
    keys = [
        "namelookup_time",
        "connect_time",
        "appconnect_time",
        "pretransfer_time",
        "starttransfer_time",
        "total_time",
        "redirect_time",
        "redirect_count",
        "http_code",
        "effective_url",
        "primary_ip",
        "primary_port",
        "local_ip",
        "local_port",
        "num_connects",
        "size_download",
        "size_upload",
        "speed_download",
        "speed_upload",
        "header_size",
        "request_size",
        "content_type",
        "ssl_verifyresult",
        "os_errno",
        "method",
    ]
    for key in keys:
        assert key in doc, key
    assert doc["http_code"] == 200 and doc["method"] == "GET"
    assert doc["primary_ip"] == "127.0.0.1" and doc["primary_port"] == server.port
    assert isinstance(doc["starttransfer_time"], float)
    # cumulative as curl's, in seconds; no upper bound in wall time (a loaded
    # machine delays the loopback server thread by any amount)
    assert 0.020 <= doc["starttransfer_time"] <= doc["total_time"] < 5
    # phases_us agree with the float stamps, to the microsecond
    assert doc["probetop"]["phases_us"]["server"] == round(
        (doc["starttransfer_time"] - doc["pretransfer_time"]) * 1e6
    )
    assert (
        doc["probetop"]["http_version"] == "1.1"
        and doc["probetop"]["redirects"][0]["http_code"] == 200
    )


# -- curl semantics (where pycurlb differs from curl) -----------------------
def echo(server, request: HttpRequest, path: str = "/echo") -> dict:
    """What the server received, via a body-keeping transfer."""
    import io

    import pycurl
    from probetop.probes.http.request import configure

    c = pycurl.Curl()
    buf = io.BytesIO()
    configure(c, request, f"{server.url}{path}", fresh=True)
    c.setopt(pycurl.WRITEDATA, buf)
    c.perform()
    c.close()
    return json.loads(buf.getvalue())


def test_headers_repeat_and_from_file(server, tmp_path):
    hfile = tmp_path / "headers.txt"
    hfile.write_text("X-From-File: yes\nX-Other: 2\n")
    request = request_of("-H", "X-One: 1", "-H", "X-Two: 2", "-H", f"@{hfile}", "http://127.0.0.1/")
    got = echo(server, request)["headers"]
    for line in ("X-One: 1", "X-Two: 2", "X-From-File: yes", "X-Other: 2"):
        assert line in got


def test_data_posts_form_encoded_like_curl(server):
    request = request_of("-d", "a=1", "-d", "b=2", "http://127.0.0.1/")
    got = echo(server, request)
    assert got["method"] == "POST"  # pycurlb sends PUT
    assert got["body"] == "a=1&b=2"
    assert "Content-Type: application/x-www-form-urlencoded" in got["headers"]
    got = echo(server, request_of("--data-urlencode", "q=a b&c", "-X", "PUT", "http://127.0.0.1/"))
    assert got["method"] == "PUT" and got["body"] == "q=a%20b%26c"


def test_user_is_sent(server, capsys):
    assert main(["http", "-u", "bob:s3cret", f"{server.url}/auth"]) == 0
    assert main(["http", f"{server.url}/auth"]) == 0  # 401 without -u: curl exits 0
    assert main(["http", "-f", f"{server.url}/auth"]) == 22  # ... and 22 with -f
    capsys.readouterr()


def test_location_gives_one_row_per_hop_with_its_own_phases(server, capsys):
    code, doc = run_json(capsys, "-L", f"{server.url}/redirect?n=3&to=/delay?ms=300")
    assert code == 0
    hops = doc["probetop"]["redirects"]
    assert [h["http_code"] for h in hops] == [302, 302, 302, 200]
    assert doc["redirect_count"] == 3 and doc["http_code"] == 200
    # Each hop has its own numbers: only the last waits 300 ms for the server
    # (not 30: at a load average of 40 a redirect hop's own took over 30 ms).
    assert hops[-1]["phases_us"]["server"] >= 300_000
    assert all(h["phases_us"]["server"] < 300_000 for h in hops[:-1])
    # Same host: curl -L reuses the connection after the first hop.
    assert hops[0]["num_connects"] == 1 and hops[1]["num_connects"] == 0
    # curl's summed figures: total = every hop's total, redirect_time = all but the last.
    total = sum(h["stamps_us"]["total"] for h in hops) / 1e6
    assert doc["total_time"] == pytest.approx(total, abs=2e-6)
    before = sum(h["stamps_us"]["total"] for h in hops[:-1]) / 1e6
    assert doc["redirect_time"] == pytest.approx(before, abs=2e-6)


def test_location_switches_post_to_get_on_303_and_keeps_it_on_307(server):
    req = HttpRequest(data="a=1", follow=True)
    ex = fetch(req, f"{server.url}/redirect?n=1&code=303")
    assert [h.method for h in ex.hops] == ["POST", "GET"]
    ex = fetch(req, f"{server.url}/redirect?n=1&code=307")
    assert [h.method for h in ex.hops] == ["POST", "POST"]


def test_max_redirs(server, capsys):
    code = main(["http", "-L", "--max-redirs", "2", f"{server.url}/redirect?n=5"])
    err = capsys.readouterr().err
    assert code == 47 and "redirects followed" in err  # CURLE_TOO_MANY_REDIRECTS


# -- TLS --------------------------------------------------------------------
def test_https_with_cacert_shows_tls_phase_version_cipher_and_expiry(tls_server, cert, capsys):
    code, doc = run_json(capsys, "--cacert", str(cert[0]), f"{tls_server.url}/delay?ms=5")
    assert code == 0
    assert doc["probetop"]["phases_us"]["tls"] > 0 and doc["appconnect_time"] > doc["connect_time"]
    assert doc["probetop"]["tls"]["version"].startswith("TLSv1.")
    assert doc["probetop"]["tls"]["cipher"]
    assert doc["probetop"]["tls"]["cert_expiry"]  # "Nov 24 05:00:00 2026 GMT"
    code = main(["http", "--cacert", str(cert[0]), f"{tls_server.url}/"])
    out = capsys.readouterr().out
    assert code == 0 and "certificate expires" in out and "TLS TLSv1." in out


def test_self_signed_without_k_is_a_tls_error_and_k_skips_verification(tls_server, capsys):
    assert main(["http", f"{tls_server.url}/"]) == 60  # CURLE_PEER_FAILED_VERIFICATION
    err = capsys.readouterr().err
    assert "tls" in err and "-k" in err
    assert main(["http", "-k", f"{tls_server.url}/"]) == 0
    capsys.readouterr()


# -- bad input: one message and one exit code each ----------------------------
@pytest.mark.parametrize(
    ("url_or_args", "code", "words"),
    [
        (["http://exa mple.com:99999/"], 3, "malformed URL"),
        (["ftp://127.0.0.1/"], 1, "unsupported scheme"),
        (["http://no-such-host.invalid/"], 6, "resolve"),
        (["http://127.0.0.1:1/"], 7, "refused"),
    ],
)
def test_bad_input_exit_codes(url_or_args, code, words, capsys):
    assert main(["http", *url_or_args]) == code
    assert words in capsys.readouterr().err


def test_timeout_500_and_empty_reply_exit_codes(server, capsys):
    assert main(["http", "-m", "0.2", f"{server.url}/delay?ms=2000"]) == 28
    assert "timeout" in capsys.readouterr().err
    assert main(["http", f"{server.url}/status?code=500"]) == 0  # curl without -f
    assert capsys.readouterr().err == ""
    assert main(["http", "--fail", f"{server.url}/status?code=500"]) == 22
    assert "500" in capsys.readouterr().err
    assert main(["http", f"{server.url}/close"]) == 52  # CURLE_GOT_NOTHING
    capsys.readouterr()


@pytest.mark.parametrize("args", [["-Z"], ["--parallel"], ["--tlsv1.2"], ["--trace=x"]])
def test_unsupported_curl_option_says_so(args, capsys):
    # Refused before anything is sent: exit 2 (usage) with a message naming the option.
    assert main(["http", *args, "http://127.0.0.1:1/"]) == 2
    err = capsys.readouterr().err
    flag = args[0].partition("=")[0]
    assert f"curl option {flag} is not supported" in err and "docs/http.md" in err


def test_pasted_curl_quiet_options_are_accepted(server, capsys):
    assert main(["http", "-s", "-S", "-o", "/dev/null", f"{server.url}/"]) == 0
    capsys.readouterr()


# -- secrets ------------------------------------------------------------------
def test_json_output_redacts_credentials(server, capsys):
    host = server.url.replace("http://", "")
    _code, doc = run_json(
        capsys,
        "-u",
        "bob:s3cret",
        "-H",
        "Authorization: Bearer tok3n",
        "-H",
        "Proxy-Authorization: Basic cHJveHk=",
        "-b",
        "session=c00kie",
        f"http://alice:pa55word@{host}/echo",
    )
    text = json.dumps(doc)
    for secret in ("s3cret", "tok3n", "cHJveHk=", "c00kie", "pa55word", "alice"):
        assert secret not in text, secret
    # The whole user-info goes (a token is often the user name: https://TOKEN@host/).
    assert f"http://***@{host}/echo" in text


def test_help_imports_neither_pycurl_nor_textual():
    script = (
        "import sys\n"
        "from probetop.tui.cli.parser import build_parser\n"
        "build_parser()\n"
        "from probetop.tui.commands import load\nload('http')\n"
        "print(sorted(m for m in ('pycurl', 'textual', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_lists_the_json_difference():
    out = subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", "http", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--json" in out and "deliberate" in out and "--data-binary" in out


def test_cross_host_redirect_drops_credentials(server):
    # 127.0.0.1 -> localhost is another host name: curl drops -u and Authorization.
    req = HttpRequest(follow=True, user="bob:s3cret", headers=["Authorization: Bearer x"])
    other = f"http://localhost:{server.port}/noauth"
    ex = fetch(req, f"{server.url}/redirect?n=1&to={other}")
    assert [h.http_code for h in ex.hops] == [302, 200]
    ex = fetch(req, f"{server.url}/redirect?n=1&to=/noauth")  # same host: kept
    assert [h.http_code for h in ex.hops] == [302, 400]


def test_resolve_connect_to_head_and_http10(server, capsys):
    port = server.port
    # --resolve: the name never reaches DNS (.test is reserved), the Host header keeps it.
    code, doc = run_json(
        capsys, "--resolve", f"svc.test:{port}:127.0.0.1", f"http://svc.test:{port}/"
    )
    assert code == 0 and doc["primary_ip"] == "127.0.0.1"
    code, doc = run_json(
        capsys, "--connect-to", f"other.test:80:127.0.0.1:{port}", "http://other.test/"
    )
    assert code == 0 and doc["primary_port"] == port
    code, doc = run_json(capsys, "-I", f"{server.url}/bytes?n=5000")
    assert code == 0 and doc["method"] == "HEAD" and doc["size_download"] == 0
    code, doc = run_json(capsys, "--http1.0", "-4", "--compressed", f"{server.url}/")
    assert code == 0  # the server answers HTTP/1.1 whatever was asked: libcurl reports that
    got = echo(server, HttpRequest(http_version="1.0", compressed=True))
    assert got["version"] == "HTTP/1.0"
    assert any(h.lower().startswith("accept-encoding:") for h in got["headers"])


def test_agent_referer_cookie_and_interface_are_sent(server):
    request = request_of(
        *[
            "-A",
            "agent/1",
            "-e",
            "http://ref.test/",
            "-b",
            "a=1; b=2",
            "--interface",
            "lo",
            "http://127.0.0.1/",
        ]
    )
    got = echo(server, request)["headers"]
    for line in ("User-Agent: agent/1", "Referer: http://ref.test/", "Cookie: a=1; b=2"):
        assert line in got


def test_proxy_option_sends_the_request_through_the_proxy(server, capsys):
    # The fixture server plays the proxy: it receives the absolute URL and echoes it.
    code, doc = run_json(capsys, "-x", server.url, "http://svc.test/via-proxy")
    assert code == 0 and doc["primary_port"] == server.port
    assert doc["effective_url"] == "http://svc.test/via-proxy"
