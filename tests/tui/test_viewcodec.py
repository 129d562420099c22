"""The remote view's compact link (tui/sessions/viewcodec.py, issue 27 want 7):
a real recording (cpu beside the host's system panes) goes through the
encoder in one-second batches and back through the decoder in arbitrary
chunks; every line comes back, in order, with what the panes draw; and the
stream is a fraction of what ssh -C makes of the plain recording."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zlib

import pytest
from probetop.tui.sessions.viewcodec import VALUE_DIGITS, VIEW_OMITS, ViewDecoder, ViewEncoder

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    path = tmp_path_factory.mktemp("vc") / "s.jsonl"
    done = subprocess.run(
        [*PROBETOP, "cpu", "--with-system", "--time", "6", "--max-prime", "2000",
         "--sample-interval", "0.5", "--json", "--record", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = path.read_bytes().splitlines()
    probes = {json.loads(raw).get("probe") for raw in lines}
    assert {"cpu", "system.cpu", "system.disk", "system.net"} <= probes  # --with-system
    return lines


def batches(lines: list[bytes]) -> list[list[bytes]]:
    """The lines in order, a new batch each time a whole second of their
    time has passed, as follow --compact sends them."""
    out: list[list[bytes]] = [[]]
    second = 0
    for raw in lines:
        t = int(json.loads(raw).get("t", 0))
        if t > second and out[-1]:
            out.append([])
        second = max(second, t)
        out[-1].append(raw)
    return out


def test_every_line_comes_back_with_what_the_panes_draw(recording: list[bytes]) -> None:
    encoder, decoder = ViewEncoder(), ViewDecoder()
    stream = b"".join(encoder.encode(b) for b in batches(recording)) + encoder.keepalive()
    rng = random.Random(7)
    back: list[bytes] = []
    keepalives = 0
    i = 0
    while i < len(stream):  # as the bytes come off a pipe: any cut
        n = rng.randint(1, 300)
        got, empty = decoder.feed(stream[i : i + n])
        back += got
        keepalives += empty
        i += n
    assert len(back) == len(recording) and keepalives == 1
    tolerance = 10.0 ** (1 - VALUE_DIGITS)  # half a unit in the last digit kept, and some
    for raw, copy in zip(recording, back, strict=True):
        a, b = json.loads(raw), json.loads(copy)
        if a.get("type") != "sample":
            assert copy == raw  # header, status, footer: byte for byte
            continue
        assert (a["probe"], round(a["t"], 3)) == (b["probe"], b["t"])
        assert abs(a["interval"] - b["interval"]) <= 0.0011
        assert list(a["values"]) == list(b["values"])  # the panes' order
        for key, value in a["values"].items():
            if value is None or isinstance(value, bool):
                assert b["values"][key] == value
            else:
                assert b["values"][key] == pytest.approx(value, rel=tolerance, abs=1e-12)
        kept = {k: v for k, v in a.get("extra", {}).items() if k not in VIEW_OMITS}
        assert b.get("extra", {}) == kept


def test_the_stream_is_a_fraction_of_ssh_compression_of_the_plain_lines(
    recording: list[bytes],
) -> None:
    """ssh -C compresses the plain follow with zlib level 6, flushed per
    packet; the compact stream must be under half of that (measured: ~1/5)."""
    encoder = ViewEncoder()
    zlib_stream = zlib.compressobj(6)
    compact = plain = 0
    for batch in batches(recording)[2:-1]:  # steady state: no header, no footer
        compact += len(encoder.encode(batch))
        data = b"".join(raw + b"\n" for raw in batch)
        plain += len(zlib_stream.compress(data) + zlib_stream.flush(zlib.Z_SYNC_FLUSH))
    assert compact < 0.5 * plain, (compact, plain)


def test_key_changes_and_odd_lines_travel_whole() -> None:
    lines = [
        b'{"type":"sample","probe":"d","t":1.0,"interval":1.0,"values":{"a@x":1.5,"b":null}}',
        # a device appears: new keys, sent again
        b'{"type":"sample","probe":"d","t":2.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":2.0,"b":true},"extra":{"k":[1,2],"gone":1}}',
        # an extra key goes away; a value the fast form cannot carry (a string)
        b'{"type":"sample","probe":"d","t":3.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":"n/a","b":false},"extra":{"k":[1,2]}}',
        b'{"type":"sample","probe":"d|e","t":3.5,"interval":0.5,"values":{"a":1}}',
        b'{"type":"sample","probe":"d","t":4.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":3.0,"b":false},"extra":{"k":[1,2]}}',
    ]
    encoder, decoder = ViewEncoder(), ViewDecoder()
    back, _ = decoder.feed(b"".join(encoder.encode([raw]) for raw in lines))
    assert [json.loads(x) for x in back] == [json.loads(x) for x in lines]


def test_follow_help_offers_compact() -> None:
    """--compact is documented where follow is."""
    done = subprocess.run(
        [*PROBETOP, "follow", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "--compact" in done.stdout


def test_values_travel_with_the_digits_the_panes_print() -> None:
    """3 significant digits (fmt_value's), every whole digit below 10000
    ("2942") and of units never shown with k/M (ms, %, MHz); a change beyond
    them does not travel (the field stays empty)."""
    sent = {
        "read_iops@a": 12345.6,  # "12.3k"
        "read_iops@b": 2942.4,  # "2942"
        "read_iops@c": 0.123456,
        "read_lat_ms@a": 12345.6,  # "12346" ms
        "busy_pct@a": 99.96,
    }
    kept = {
        "read_iops@a": 12300.0,
        "read_iops@b": 2942.0,
        "read_iops@c": 0.123,
        "read_lat_ms@a": 12346.0,
        "busy_pct@a": 100.0,
    }
    nudged = {  # the same on screen
        "read_iops@a": 12340.0,
        "read_iops@b": 2941.9,
        "read_iops@c": 0.12304,
        "read_lat_ms@a": 12346.4,
        "busy_pct@a": 99.951,
    }
    lines = [
        json.dumps(
            {"type": "sample", "probe": "d", "t": t, "interval": 1.0, "values": v},
            separators=(",", ":"),
        ).encode()
        for t, v in ((1.0, sent), (2.0, nudged))
    ]
    encoder = ViewEncoder()
    coded = encoder._line(lines[0]) + encoder._line(lines[1])
    assert coded.splitlines()[-1].split("|")[3] == ",,,,", coded  # nothing to redraw
    encoder, decoder = ViewEncoder(), ViewDecoder()
    back, _ = decoder.feed(encoder.encode(lines))
    assert [json.loads(x)["values"] for x in back] == [kept, kept], coded


def test_the_history_travels_at_full_precision(recording: list[bytes]) -> None:
    """What a view rebuilds its panes from on attach (follow's backlog,
    ``live=False``) keeps every digit; only the live lines after it are thinned."""
    half = len(recording) // 2
    encoder, decoder = ViewEncoder(), ViewDecoder()
    back, _ = decoder.feed(
        encoder.encode(recording[:half], live=False) + encoder.encode(recording[half:])
    )
    samples = [
        (json.loads(raw)["values"], json.loads(copy)["values"])
        for raw, copy in zip(recording, back, strict=True)
        if raw.startswith(b'{"type":"sample"')
    ]
    n_history = sum(raw.startswith(b'{"type":"sample"') for raw in recording[:half])
    assert all(a == b for a, b in samples[:n_history])
    assert any(a != b for a, b in samples[n_history:])  # thinned, yet within the panes' digits
