"""probes/record cut where the jobs part (issue 25, Want 4): no private name
crosses a module, and reading a recording passes four reader modules (plus
codec, the line format the writer shares)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

RECORD = Path(__file__).resolve().parents[2] / "probes" / "record"
READER_MODULES = {"rawlines", "linecheck", "fastpath", "reader", "codec", "errors"}


def private_names_crossing(root: Path) -> list[str]:
    """``from probetop.X import _name`` and ``module._name`` (``module`` a
    probetop module imported by name) in the modules under ``root``."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        modules: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("probetop"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        hits.append(f"{path.name}:{node.lineno}: {alias.name}")
                    else:
                        modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                modules.update(
                    (a.asname or a.name).split(".")[0]
                    for a in node.names
                    if a.name.startswith("probetop")
                )
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
            ):
                hits.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return hits


def test_no_private_name_crosses_a_record_module() -> None:
    assert private_names_crossing(RECORD) == []


def test_reading_a_recording_passes_four_reader_modules_and_the_codec(tmp_path: Path) -> None:
    """Every way to read (load, step, stream, follow, one line), plain and
    .zst: the probes/record modules it imports beyond the front door's."""
    script = f"""
import json, sys
import probetop.probes.record as rec
before = set(sys.modules)
from probetop.probes.record.codec import dump_line
header = {{"type": "header", "format": "probetop-session", "schema": 1, "probes": []}}
sample = {{"type": "sample", "probe": "p", "t": 0.5, "interval": 0.5, "values": {{"x": 1}}}}
plain = {str(tmp_path / "r.jsonl")!r}
open(plain, "w").write(dump_line(header) + dump_line(sample))
import zstandard
zst = plain + ".zst"
open(zst, "wb").write(zstandard.ZstdCompressor().compress(open(plain, "rb").read()))
for path in (plain, zst):
    list(rec.load_session(path).records())
    with rec.SessionLoader(path) as loader:
        loader.step(10)
    with rec.stream_session(path) as stream:
        list(stream.records())
    with rec.RecordingFollower(path) as follower:
        follower.poll()
        follower.tail(1000)
rec.decode_line(dump_line(header).encode().rstrip(), None, None, "x")
new = sorted(m.rsplit(".", 1)[1] for m in set(sys.modules) - before
             if m.startswith("probetop.probes.record."))
print(json.dumps(new))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert loaded <= READER_MODULES, loaded - READER_MODULES
    assert {"rawlines", "linecheck", "fastpath", "reader"} <= loaded, loaded
