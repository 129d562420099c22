"""The remote view's compact link (tui/sessions/viewcodec.py, issue 27 want 7).

A real recording (cpu beside the host's system panes) goes through the
encoder in one-second batches and back through the decoder in arbitrary
chunks: every line comes back, in order; every number prints as the host's
own panes print it (``fmt_value``, the panes' formatter); the history goes
byte for byte; a stream that is not one, of another version, or damaged is
refused with a ``LinkError`` (never another exception); and the stream is a
fraction of what ssh -C makes of the plain recording.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import zlib
from typing import Any

import pytest
from probetop.probes.core.sample import SeriesEnded
from probetop.probes.record import decode_line
from probetop.tui.sessions.rangecoder import Model, NumberModel, RangeDecoder, RangeEncoder
from probetop.tui.sessions.viewcodec import (
    MAGIC,
    VERSION,
    VIEW_OMITS,
    LinkError,
    ViewDecoder,
    ViewEncoder,
)
from probetop.tui.ui.widgets.history import fmt_value

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


def units(lines: list[bytes]) -> dict[tuple[str, str], str]:
    """(probe, metric) -> unit, from the recording's header."""
    header = json.loads(lines[0])
    return {
        (probe["id"], metric["name"]): metric["unit"]
        for probe in header["probes"]
        for metric in probe["metrics"]
    }


def printed(value: float, unit: str) -> list[str]:
    """Every way a pane prints ``value`` of ``unit``: fmt_value as is, and for
    byte rates the MB/s columns (scaled, no k/M prefix)."""
    out = [fmt_value(value, unit), fmt_value(value, unit, 7)]
    if unit == "B/s":
        out.append(fmt_value(value / 1e6, "MB/s", si=False))
    return out


def line(record: dict[str, Any]) -> bytes:
    """A recording line as the recorder writes it (compact JSON)."""
    return json.dumps(record, separators=(",", ":")).encode()


def decode_in_pieces(stream: bytes, seed: int = 7) -> tuple[list[bytes], int]:
    decoder = ViewDecoder()
    rng = random.Random(seed)
    back: list[bytes] = []
    keepalives = i = 0
    while i < len(stream):  # as the bytes come off a pipe: any cut
        n = rng.randint(1, 300)
        fed = decoder.feed(stream[i : i + n])
        back += fed.lines
        keepalives += fed.keepalives
        i += n
    return back, keepalives


def test_every_line_comes_back_printing_as_the_hosts(recording: list[bytes]) -> None:
    encoder = ViewEncoder()
    stream = b"".join(encoder.encode(b) for b in batches(recording)) + encoder.keepalive()
    back, keepalives = decode_in_pieces(stream)
    assert len(back) == len(recording) and keepalives == 1
    unit_of = units(recording)
    checked = 0
    for raw, copy in zip(recording, back, strict=True):
        a, b = json.loads(raw), json.loads(copy)
        if a.get("type") == "series_end" and copy != raw:  # coded: a device went meanwhile
            assert b == {**a, "t": b["t"], "last_t": b["last_t"], "summaries": {}}
            assert abs(a["t"] - b["t"]) <= 0.0005 and abs(a["last_t"] - b["last_t"]) <= 0.0005
            continue
        if a.get("type") != "sample":
            assert copy == raw  # header, status, footer: byte for byte
            continue
        # the link's rule for a time in ms (round(t * 1000)): round(t, 3)
        # differs where t * 1000 ends in .5 in binary (3.5795 -> 3.579 / 3.58)
        assert (a["probe"], round(a["t"] * 1000) / 1000) == (b["probe"], b["t"])
        assert abs(a["interval"] - b["interval"]) <= 0.0011
        assert list(a["values"]) == list(b["values"])  # the panes' order
        for key, value in a["values"].items():
            if not isinstance(value, float):
                assert b["values"][key] == value
                continue
            unit = unit_of[a["probe"], key.split("@", 1)[0]]
            assert printed(b["values"][key], unit) == printed(value, unit), (key, value)
            # and within half a unit of the third significant digit
            if value:
                unit3 = 10.0 ** (math.floor(math.log10(abs(value))) - 2)
                assert abs(b["values"][key] - value) <= 0.5 * unit3 * 1.001, (key, value)
            checked += 1
        kept = {k: v for k, v in a.get("extra", {}).items() if k not in VIEW_OMITS}
        assert b.get("extra", {}) == kept  # every digit
    assert checked > 200


@pytest.mark.parametrize("unit", ["", "%", "ms", "B/s", "IO/s", "MHz"])
def test_any_value_prints_as_the_hosts(unit: str) -> None:
    """Values of every size, those on a rounding boundary (0.715 ms, 24500
    B/s, 999803 B/s, 9999.7) among them, through the link: fmt_value prints
    what it prints of the host's value."""
    rng = random.Random(unit)
    key = {"%": "busy_pct", "ms": "read_lat_ms", "MHz": "core_mhz"}.get(unit, "x")
    values = [0.715, 0.3749, 0.125, 24999.0, 24500.0, 12350.0, 999803.2, 9999.7, 9.996, 99.96]
    for _ in range(3000):
        scale = 10.0 ** rng.randint(-4, 8)
        values.append(rng.choice([rng.random() * scale, round(rng.random() * 1e4) * scale / 1e4]))
    lines = [
        line(
            {
                "type": "sample",
                "probe": "d",
                "t": i + 1.0,
                "interval": 1.0,
                "values": {key: v, f"{key}@neg": -v},
            }
        )
        for i, v in enumerate(values)
    ]
    encoder = ViewEncoder()
    fed = ViewDecoder().feed(b"".join(encoder.encode(lines[i : i + 10])
                                      for i in range(0, len(lines), 10)))  # fmt: skip
    assert all(fed.coded)  # through the coded form, not as they are
    for value, copy in zip(values, fed.lines, strict=True):
        got = json.loads(copy)["values"]
        assert printed(got[key], unit) == printed(value, unit), value
        assert printed(got[f"{key}@neg"], unit) == printed(-value, unit), -value


def test_the_history_travels_byte_for_byte(recording: list[bytes]) -> None:
    """What a view rebuilds its panes from on attach (follow's backlog,
    ``live=False``) is the recording as it is; only the live lines after it
    are coded."""
    half = len(recording) // 2
    encoder, decoder = ViewEncoder(), ViewDecoder()
    fed = decoder.feed(
        encoder.encode(recording[:half], live=False) + encoder.encode(recording[half:])
    )
    assert fed.lines[:half] == recording[:half]
    assert fed.coded[:half] == [False] * half
    assert any(fed.coded[half:])  # the live samples: coded
    assert any(a != b for a, b in zip(recording[half:], fed.lines[half:], strict=True))


def test_key_changes_and_odd_lines_travel_whole() -> None:
    lines = [
        b'{"type":"sample","probe":"d","t":1.0,"interval":1.0,"values":{"a@x":1.5,"b":null}}',
        # a device appears: new keys; extra with numbers of both kinds
        b'{"type":"sample","probe":"d","t":2.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":2.0,"b":true},"extra":{"k":[1,2.5],"gone":1,"h":[[32.768,40.96,1.0]]}}',
        # an extra key goes away; a value the fast form cannot carry (a string)
        b'{"type":"sample","probe":"d","t":3.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":"n/a","b":false},"extra":{"k":[1,2]}}',
        b'{"type":"sample","probe":"d|e","t":3.5,"interval":0.5,"values":{"a":1}}',
        b'{"type":"sample","probe":"d","t":4.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":3.0,"b":false},"extra":{"k":[1,3],"h":[[40.96,51.2,2.0]]}}',
        b'{"type":"sample","probe":"d","t":5.0,"interval":1.0,"values":'
        b'{"a@x":-0.0,"a@y":3.0,"b":false},"extra":{"k":[1,3],"h":[[40.96,51.2,2.0]]}}',
        b'{"type":"sample","probe":"d","t":6.0,"interval":1.0,"values":'
        b'{"a@x":NaN,"a@y":3.0,"b":false},"extra":{"k":[-7,3e300],"h":[[1e-300,5e-324,0.1]]}}',
        b'{"type":"status","probe":"d","t":6.5,"state":"ok"}',
        b'{"type":"sample","probe":"d","t":7.0,"interval":1.0,"values":'
        b'{"a@x":1.5,"a@y":3.0,"b":false},"extra":{"k":[-7,3e300],"h":[[1e-300,5e-324,0.1]]}}',
        # a@y equalled a@x; now it is the first key: its old link is gone
        b'{"type":"sample","probe":"d","t":8.0,"interval":1.0,"values":{"a@x":3.0,"a@y":3.0}}',
        b'{"type":"sample","probe":"d","t":9.0,"interval":1.0,"values":{"a@y":4.0}}',
        b'{"type":"sample","probe":"d","t":10.0,"interval":1.0,"values":{"a@y":5.0}}',
    ]
    encoder, decoder = ViewEncoder(), ViewDecoder()
    back = decoder.feed(b"".join(encoder.encode([raw]) for raw in lines)).lines
    assert [json.loads(x) for x in back] == [json.loads(x) for x in lines]


def test_devices_that_come_and_go_keep_both_sides_in_step() -> None:
    """Keys appear and disappear between samples (devices), values equal one
    another (links), grow by one another (totals) and keep ratios: the view
    decodes every sample as the host coded it. (A link kept across a key
    change pointed at a field not decoded yet: IndexError.)"""
    rng = random.Random(5)
    pool = ["a@x", "b@x", "c@y", "d@y", "e", "f@z"]
    levels = [0.0, 1.5, 2.5, 4096.0, 8192.0, 0.997, 1.0, 1e6 / 3]
    lines, values = [], []
    total = 0
    for i in range(400):
        keys = [k for k in pool if rng.random() < 0.8] or ["e"]
        sample = {k: rng.choice(levels) * rng.choice([1, 1, 1, 2]) for k in keys}
        if "b@x" in sample and "a@x" in sample and rng.random() < 0.7:
            sample["b@x"] = sample["a@x"]  # rx = tx
        total += int(sample.get("e", 0))
        extra = {"total": total, "h": [[rng.choice([28.672, 32.768]), 1.0]] * rng.randint(1, 2)}
        lines.append(line({"type": "sample", "probe": "d", "t": i + 1.0,
                           "interval": 1.0 + rng.randint(-2, 2) / 1000, "values": sample,
                           "extra": extra}))  # fmt: skip
        values.append((sample, extra))
    encoder = ViewEncoder()
    stream = b"".join(encoder.encode(lines[i : i + 5]) for i in range(0, 400, 5))
    fed = ViewDecoder().feed(stream)
    assert sum(fed.coded) > 300
    for (sample, extra), copy in zip(values, fed.lines, strict=True):
        got = json.loads(copy)
        assert list(got["values"]) == list(sample)
        for key, value in sample.items():
            assert printed(got["values"][key], "") == printed(value, ""), (key, value)
        assert got["extra"] == extra


def churn(seconds: int, seed: int = 1) -> list[bytes]:
    """A system.net-like probe's lines while other processes churn veth pairs
    (a new random name each time, idle) and loop devices (names reused): a
    device comes every second and one goes with its series_end (summaries
    of every metric, as the recorder writes them) just before the sample
    without it."""
    rng = random.Random(seed)
    metrics = ["rx_pps", "tx_pps", "rx_Bps", "tx_Bps", "rx_errors", "tx_errors", "rx_drops",
               "tx_drops"]  # fmt: skip
    devices = ["lo", "eth0", "loop0", "veth1a2b3c4"]
    born = {d: 0.0 for d in devices}
    out = []
    for second in range(1, seconds + 1):
        t = second + rng.randint(-3, 3) / 1000 + 0.000321
        if second % 2:
            devices.append(f"veth{rng.getrandbits(28):07x}")
        else:
            devices.append(f"loop{rng.randrange(8)}" if f"loop{second % 8}" in devices
                           else f"loop{second % 8}")  # fmt: skip
        devices = list(dict.fromkeys(devices))
        born.setdefault(devices[-1], t)
        if len(devices) > 8:
            gone = devices.pop(2)
            summaries = {m: {"count": rng.randint(1, 9), "min": 0.0, "mean": rng.random() * 3,
                             "max": rng.random() * 9} for m in metrics}  # fmt: skip
            out.append(line({"type": "series_end", "probe": "system.net", "entity": gone,
                             "t": t, "last_t": t - 1.0007, "reason": "vanished",
                             "summaries": summaries}))  # fmt: skip
            del born[gone]
        values: dict[str, Any] = {}
        for d in devices:  # lo and eth0 carry a steady 64 packets/s: only churn costs
            busy = d in ("lo", "eth0")
            for m in metrics:
                values[f"{m}@{d}"] = (100.0 if "Bps" in m else 1.0) * 64 * busy * (
                    "errors" not in m and "drops" not in m)  # fmt: skip
        out.append(line({"type": "sample", "probe": "system.net", "t": t, "interval": 1.0,
                         "values": values}))  # fmt: skip
    return out


def test_churning_devices_cost_a_few_bytes_and_their_ends_travel_coded() -> None:
    """A device that comes (its metrics as another device's, its name) and
    goes (a series_end) travels inside the range-coded message: a few bytes,
    where a schema and a series_end line in text cost 60-180 (format 2).
    The view's series_end line is one the recording reader accepts: whose,
    when (to the ms), why; its summaries stay on the host (no pane reads
    them)."""
    lines = churn(120)
    encoder = ViewEncoder()
    stream = b"".join(encoder.encode(lines[i : i + 4]) for i in range(0, 16, 4))
    warm = len(stream)
    stream += b"".join(encoder.encode(lines[i : i + 4]) for i in range(16, len(lines), 4))
    fed = ViewDecoder().feed(stream)
    assert len(fed.lines) == len(lines) and all(fed.coded[4:])
    ends = 0
    header = json.loads(b'{"format":"probetop-session","schema":1,"started_at":"","probetop":""}')
    for raw, copy in zip(lines, fed.lines, strict=True):
        a, b = json.loads(raw), json.loads(copy)
        if a["type"] == "series_end":
            ends += 1
            assert b["summaries"] == {} and {**a, "summaries": {}, "t": b["t"],
                                             "last_t": b["last_t"]} == b  # fmt: skip
            assert abs(a["t"] - b["t"]) <= 0.0005 and abs(a["last_t"] - b["last_t"]) <= 0.0005
            record = decode_line(copy, header, None, "view").records[0][1]
            assert isinstance(record, SeriesEnded) and record.entity == a["entity"]
        else:
            assert list(b["values"]) == list(a["values"]) and b["values"] == a["values"]
    assert ends > 100
    seconds = sum(b'"sample"' in raw for raw in lines[16:])
    # per second a device came (half of them a veth's 28 random bits of name)
    # and one went: about 9 B/s with a frame's header every 2 s; 236 B/s in format 2
    assert (len(stream) - warm) / seconds < 12, (len(stream) - warm) / seconds


def test_a_stream_of_another_kind_or_version_is_refused() -> None:
    with pytest.raises(LinkError, match="not a probetop view stream"):
        ViewDecoder().feed(b'{"type":"header"}\n')
    for other in (VERSION - 1, VERSION + 1):  # the format before series_end travelled coded
        with pytest.raises(
            LinkError, match=f"format {other}; this probetop reads format {VERSION}"
        ):
            ViewDecoder().feed(MAGIC + bytes([other]) + b"\0")
    assert ViewDecoder().feed(MAGIC[:3]).lines == []  # not all there yet: wait
    with pytest.raises(LinkError, match="frame"):
        ViewDecoder().feed(MAGIC + bytes([VERSION, 3]))  # kind 3: none such


@pytest.mark.parametrize("lines", ["recording", "churn"])
def test_a_damaged_stream_says_so_and_nothing_else(
    lines: str, request: pytest.FixtureRequest
) -> None:
    """Every kind of damage (a flipped byte, a cut, bytes thrown in) ends in
    a LinkError or in lines; never in another exception (a traceback). Of a
    real recording, and of devices coming and going (coded key changes and
    series_end lines)."""
    encoder = ViewEncoder()
    source = request.getfixturevalue("recording") if lines == "recording" else churn(20)
    frames = [encoder.encode(b) for b in batches(source)]
    stream = b"".join(frames)
    rng = random.Random(11)
    errors = 0
    for _ in range(400):
        data = bytearray(stream)
        how = rng.randrange(3)
        at = rng.randrange(len(MAGIC) + 1, len(data))
        if how == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif how == 1:
            del data[at : at + rng.randint(1, 40)]
        else:
            data[at:at] = rng.randbytes(rng.randint(1, 40))
        try:
            ViewDecoder().feed(bytes(data))
        except LinkError as exc:
            assert str(exc)
            errors += 1
    assert errors > 100  # most damage is noticed


def test_the_stream_is_a_fraction_of_ssh_compression_of_the_plain_lines(
    recording: list[bytes],
) -> None:
    """ssh -C compresses the plain follow with zlib level 6, flushed per
    packet; the compact stream must be well under half of that (measured
    0.30 over these 6 s, most of it the models' first values: less later)."""
    encoder = ViewEncoder()
    zlib_stream = zlib.compressobj(6)
    compact = plain = 0
    for batch in batches(recording)[2:-1]:  # steady state: no header, no footer
        compact += len(encoder.encode(batch))
        data = b"".join(raw + b"\n" for raw in batch)
        plain += len(zlib_stream.compress(data) + zlib_stream.flush(zlib.Z_SYNC_FLUSH))
    assert compact < 0.4 * plain, (compact, plain)


def test_a_count_over_a_jittery_interval_costs_next_to_nothing() -> None:
    """One packet a second over intervals of 0.997-1.003 s reads 0.997-1.00
    /s: the digits jump, the count (1) does not; it travels as the count."""
    rng = random.Random(3)
    lines = []
    t = 0.0
    for _ in range(200):
        interval = 1.0 + rng.randint(-3, 3) / 1000
        t += interval
        values = {"rx_pps@lo": 1 / interval}
        sample = {"type": "sample", "probe": "n", "t": round(t, 6), "interval": interval,
                  "values": values}  # fmt: skip
        lines.append(line(sample))
    encoder = ViewEncoder()
    sizes = [len(encoder.encode([raw])) for raw in lines]
    assert sum(sizes[100:]) / 100 < 4  # bytes a second, frame and time included


def test_steady_samples_build_no_new_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a probe's series exist, a sample of the same keys reuses their
    models on both sides: building a series' 23 adaptive models for every
    value of every sample and throwing them away was a third of the link's
    CPU (``dict.setdefault`` builds its default first)."""
    rng = random.Random(5)
    keys = [f"{m}@{d}" for d in ("lo", "eth0", "loop0") for m in ("rx_pps", "tx_pps", "rx_Bps")]
    lines = [line({"type": "sample", "probe": "n", "t": float(s), "interval": 1.0,
                   "values": {k: float(rng.randint(0, 9000)) for k in keys},
                   "extra": {"cores": [rng.randint(0, 99), rng.randint(0, 99)]}})
             for s in range(1, 41)]  # fmt: skip
    encoder, decoder = ViewEncoder(), ViewDecoder()
    warm = [encoder.encode([raw]) for raw in lines[:20]]
    assert len(decoder.feed(b"".join(warm)).lines) == 20
    built = 0
    model_init = Model.__init__

    def counted(self: Model, size: int = 1) -> None:
        nonlocal built
        built += 1
        model_init(self, size)

    monkeypatch.setattr(Model, "__init__", counted)
    stream = b"".join(encoder.encode([raw]) for raw in lines[20:])
    assert decoder.feed(stream).lines == lines[20:]
    assert built == 0, f"{built} models built for 20 samples of known series"


def test_the_range_coder_reads_back_what_it_wrote() -> None:
    rng = random.Random(1)
    for _ in range(300):
        ops: list[tuple[str, int, int]] = []
        for _ in range(rng.randint(0, 60)):
            k = rng.randrange(4)
            if k == 0:
                ops.append(("bit", rng.randrange(4), int(rng.random() < 0.8)))
            elif k == 1:
                big = rng.randint(-(2**60), 2**60)
                ops.append(
                    ("num", rng.randrange(3), rng.choice([0, 1, -1, rng.randint(-9, 9), big]))
                )
            elif k == 2:
                ops.append(("sym", 0, rng.randrange(256)))
            else:
                ops.append(("dir", 0, rng.getrandbits(13)))

        def models() -> tuple[Model, list[NumberModel], Model]:
            return Model(4), [NumberModel() for _ in range(3)], Model(256)

        bits, numbers, symbols = models()
        enc = RangeEncoder()
        for op, i, v in ops:
            if op == "bit":
                enc.bit(bits, i, v)
            elif op == "num":
                enc.number(numbers[i], v)
            elif op == "sym":
                enc.symbol(symbols, v, 8)
            else:
                enc.direct(v, 13)
        bits, numbers, symbols = models()
        dec = RangeDecoder(enc.finish())
        for op, i, v in ops:
            if op == "bit":
                got = dec.bit(bits, i)
            elif op == "num":
                got = dec.number(numbers[i])
            elif op == "sym":
                got = dec.symbol(symbols, 8)
            else:
                got = dec.direct(13)
            assert got == v


def test_follow_help_offers_compact_and_batch() -> None:
    """--compact and --batch are documented where follow is; --batch alone is refused."""
    done = subprocess.run(
        [*PROBETOP, "follow", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "--compact" in done.stdout and "--batch" in done.stdout
    alone = subprocess.run(
        [*PROBETOP, "follow", "x", "--batch", "2"], capture_output=True, text=True, timeout=60
    )
    assert alone.returncode == 2 and "--batch needs --compact" in alone.stderr
    assert "Traceback" not in alone.stderr
