"""A sample's ``extra``, checked when the recording was read, parsed when used.

Contract: ``LazyExtra(raw)`` holds the bytes of a JSON object that the
reader's checks passed (``fastpath.decode_block``): ``bytes``, or the
``msgspec.Raw`` the decode gave, which keeps the bytes of its line in
memory until the extra is parsed (at most the recording's size in all). It is a
read-only
``Mapping`` (the type ``Sample.extra`` has) whose first lookup parses the
bytes (orjson; ``json`` if orjson ever refused them) and drops them. Equal
to any mapping with the same items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import msgspec


class LazyExtra(Mapping[str, Any]):
    """A sample's ``extra`` object, already checked, parsed on first use.

    A read-only mapping; ``dict(extra)`` or any lookup parses it (orjson;
    the checks guarantee it parses to what ``json`` would give)."""

    __slots__ = ("_data", "_raw")

    def __init__(self, raw: bytes | msgspec.Raw) -> None:
        self._raw: bytes | msgspec.Raw | None = raw
        self._data: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The parsed object (parsed now if it was not yet)."""
        if self._data is None:
            assert self._raw is not None
            raw = memoryview(self._raw)  # what orjson takes of a msgspec.Raw
            try:
                self._data = orjson.loads(raw)
            except orjson.JSONDecodeError:  # not expected: json reads all the checks pass
                self._data = json.loads(raw.tobytes())
            self._raw = None  # the objects replace the bytes
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyExtra):
            other = other.data
        return self.data == other

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable, as a dict

    def __repr__(self) -> str:
        return f"LazyExtra({self.data!r})"
