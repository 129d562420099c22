"""The cache of the methods ``@dataclass`` writes and of regular expressions'
programs (tui/run/codecache.py, issue 28): the classes and patterns behave as
compiled anew, a second start compiles nothing, and a cache file someone else
could have written is never run.

Each case is a fresh interpreter (the cache is read once per process), with
Python's bytecode kept under a private PYTHONPYCACHEPREFIX, as an installed
probetop's console script runs.
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Dataclasses of every kind of generated method (init with defaults and a
# factory, repr, eq, order, frozen's setattr, hash, slots), described by
# what a caller sees; then whether this run compiled anything it lacked.
CLASSES = r"""
import dataclasses, json, sys
from probetop.tui.run import codecache
codecache.install("test")
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True, order=True)
class Point:
    x: int
    y: int = 2
    tags: tuple[str, ...] = field(default_factory=tuple)

@dataclass
class Box:
    size: float
    note: str = "n"

import collections, typing
Pair = collections.namedtuple("Pair", "left right", defaults=(0,))
Later = typing.List["Box"]

import re
PATTERNS = [
    re.compile(r"(?P<word>\w+)-(\d+)"),
    re.compile(rb"^ab+c$", re.IGNORECASE),
    re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s\"'<>]*)@"),
    re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]|x{2,5}?", re.VERBOSE | re.MULTILINE),
]
"""
BEHAVIOUR = r"""
p, q = Point(1), Point(1, 3, ("a",))
try:
    p.x = 5
    frozen = "no"
except dataclasses.FrozenInstanceError as exc:
    frozen = type(exc).__name__
box = Box(2.5)
box.size = 3.0
out = {
    "repr": [repr(p), repr(q), repr(box)],
    "eq": [p == Point(1), p == q, box == Box(3.0)],
    "order": p < q,
    "hash": hash(p) == hash(Point(1)),
    "frozen": frozen,
    "init_return": repr(Point.__init__.__annotations__.get("return")),
    "init_code": Point.__init__.__code__.co_filename,
    "patterns": [
        [p.flags, p.groups, dict(p.groupindex), repr(p.findall(s)), repr(p.search(s))]
        for p, s in zip(PATTERNS, ["ab-1 cd-22", b"ABBBC", "see http://u:pw@h/", "a\x01xxxxxxx"])
    ],
    "scanner": re.Scanner([(r"\d+", lambda _s, t: int(t)), (r"\s+", None)]).scan("1 22 x"),
    "namedtuple": [repr(Pair(1)), repr(Pair._make([2, 3])), Pair.__new__.__code__.co_filename],
    "forward": [
        repr(typing.get_type_hints(type("H", (), {"__annotations__": {"b": Later}}))["b"]),
        Later.__args__[0].__forward_code__.co_filename,
    ],
    "missed": codecache._missed,
}
codecache.save()
print(json.dumps(out))
"""
SCRIPT = CLASSES + BEHAVIOUR

EXPECTED = {
    "repr": ["Point(x=1, y=2, tags=())", "Point(x=1, y=3, tags=('a',))", "Box(size=3.0, note='n')"],
    "eq": [True, False, True],
    "order": True,
    "hash": True,
    "frozen": "FrozenInstanceError",
    # dataclasses' own compile: no `from __future__ import annotations`, so
    # the return annotation is None itself, not the string '_return_type'.
    "init_return": "None",
    "init_code": "<string>",
    "namedtuple": ["Pair(left=1, right=0)", "Pair(left=2, right=3)", "<string>"],
    "forward": ["typing.List[__main__.Box]", "<string>"],
}


def _env(prefix: Path, *, write: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    return env


def _run(prefix: Path, script: str = SCRIPT, *, write: bool = True) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=_env(prefix, write=write),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def _cache_file(prefix: Path) -> Path:
    (found,) = (prefix / "probetop-startup").glob("test-*.marshal")
    return found


def _without_missed(result: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in result.items() if k != "missed"}


def _described(result: dict[str, object]) -> dict[str, object]:
    """The classes' behaviour, as EXPECTED states it."""
    return {k: v for k, v in result.items() if k in EXPECTED}


def test_second_start_compiles_nothing_and_classes_behave_the_same(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert first["missed"] is True
    cache = _cache_file(tmp_path)
    assert cache.stat().st_mode & 0o777 == 0o600
    assert (cache.parent.stat().st_mode & 0o777) == 0o700
    second = _run(tmp_path)
    assert second["missed"] is False, "the second start compiled what the first had saved"
    # The namedtuple's __new__ and the forward reference came from it too.
    keys = [k for k in marshal.loads(cache.read_bytes()) if isinstance(k, str)]
    assert "\0eval\0Box" in keys
    assert any(k.startswith("\0eval\0lambda _cls, left, right") for k in keys), keys
    # The patterns as re makes them without the cache.
    plain = _run(tmp_path / "plain", SCRIPT.replace('codecache.install("test")', "pass"))
    assert _without_missed(first) == _without_missed(second) == _without_missed(plain)
    assert _described(plain) == EXPECTED
    assert plain["scanner"] == [[1, 22], "x"] and len(plain["patterns"]) == 4


def test_nothing_written_under_pythondontwritebytecode(tmp_path: Path) -> None:
    result = _run(tmp_path, write=False)
    assert _described(result) == EXPECTED
    assert not (tmp_path / "probetop-startup").exists()


def test_a_corrupt_cache_is_compiled_anew_and_replaced(tmp_path: Path) -> None:
    _run(tmp_path)
    cache = _cache_file(tmp_path)
    cache.write_bytes(b"\x00not marshal at all")
    result = _run(tmp_path)
    assert result["missed"] is True
    assert _described(result) == EXPECTED
    assert isinstance(marshal.loads(cache.read_bytes()), dict)


def _poison(cache: Path) -> None:
    """Every cached method replaced by code that says it ran, and ends the process."""
    codes = marshal.loads(cache.read_bytes())
    evil = compile(
        "def __create_fn__(*a, **k):\n"
        "    import os\n"
        "    os.write(1, b'{\"poisoned\": true}\\n')\n"
        "    os._exit(0)\n",
        "<poison>",
        "exec",
    )
    cache.write_bytes(marshal.dumps(dict.fromkeys(codes, evil)))


POISON_CHECK = CLASSES + "print(json.dumps({'poisoned': False}))"


@pytest.mark.parametrize(
    ("file_mode", "dir_mode", "runs_it"),
    [
        (0o600, 0o700, True),  # our own private file is trusted: proves the check can fail
        (0o620, 0o700, False),  # group may write it
        (0o602, 0o700, False),  # anyone may write it
        (0o600, 0o770, False),  # the group may replace it in the directory
    ],
)
def test_a_cache_others_could_write_is_never_run(
    tmp_path: Path, file_mode: int, dir_mode: int, runs_it: bool
) -> None:
    _run(tmp_path)
    cache = _cache_file(tmp_path)
    _poison(cache)
    cache.chmod(file_mode)
    cache.parent.chmod(dir_mode)
    result = _run(tmp_path, POISON_CHECK, write=False)
    assert result["poisoned"] is runs_it


def test_a_symlinked_cache_is_never_run(tmp_path: Path) -> None:
    _run(tmp_path)
    cache = _cache_file(tmp_path)
    _poison(cache)
    elsewhere = tmp_path / "elsewhere.marshal"
    cache.rename(elsewhere)
    cache.symlink_to(elsewhere)
    assert _run(tmp_path, POISON_CHECK, write=False)["poisoned"] is False


def test_a_pattern_program_re_refuses_is_compiled_anew(tmp_path: Path) -> None:
    """A kept program _sre cannot load (another re's, damaged) never breaks a
    pattern: it is compiled as re always does, and the entry replaced."""
    first = _run(tmp_path)
    cache = _cache_file(tmp_path)
    codes = marshal.loads(cache.read_bytes())
    patterns = [key for key in codes if isinstance(key, tuple)]
    assert patterns
    for key in patterns:
        flags, _code, groups, groupindex, indexgroup = codes[key]
        codes[key] = (flags, [999_999, 1, 2], groups, groupindex, indexgroup)
    cache.write_bytes(marshal.dumps(codes))
    again = _run(tmp_path)
    assert again["missed"] is True
    assert _without_missed(again) == _without_missed(first)
    assert marshal.loads(cache.read_bytes())[patterns[0]][1] != [999_999, 1, 2]
