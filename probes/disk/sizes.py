"""Byte sizes and ranges as the disk probes' options spell them.

Contract: ``parse_size("4k") == 4096``: fio's units (k/m/g/t are powers of
1024, optional trailing "b"/"ib"); a plain number is bytes; ValueError if
bad. ``format_size`` is the shortest such spelling. ``parse_range("1g-2g")``
gives (start, end) in bytes; ``"-"`` ends are open. ``split_size`` is fio's
split of --size over a job's --nrfiles files.
"""

from __future__ import annotations

from probetop.probes.core.options import parse_byte_size

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_size(text: str | int) -> int:
    """Bytes from fio-style text ("1", "4k", "1M", "2GiB"); ValueError if bad.
    The grammar is the CLI's size parser (``core.options.parse_byte_size``)."""
    if isinstance(text, int):
        return text
    return parse_byte_size(str(text))


def format_size(n: int) -> str:
    """The shortest fio-style spelling of a byte count ("4k", "1M", "512")."""
    for unit in ("P", "T", "G", "M", "k"):
        mult = _UNITS[unit.lower()]
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def parse_range(text: str) -> tuple[int | None, int | None]:
    """(start, end) from "START-END"; either side may be empty (open)."""
    start, sep, end = text.partition("-")
    usage = f"not a range: {text!r} (use START-END, sizes 0 or more, e.g. 0-10G or 1G-)"
    if not sep or "-" in end:  # "-5-10", "1-2-3": a second dash is no size's
        raise ValueError(usage)
    try:
        return (
            parse_size(start) if start.strip() else None,
            parse_size(end) if end.strip() else None,
        )
    except ValueError as exc:  # the size's own message, about the whole range
        raise ValueError(f"{usage}: {exc}") from None


def split_size(size: int, nrfiles: int, bs: int) -> list[int]:
    """Each of a job's ``nrfiles`` files' sizes, as fio splits ``--size``
    (filesetup.c): ``size // nrfiles`` each, and the first files one ``bs``
    bigger while the remainder holds whole blocks (10 bytes, 3 files, bs 1:
    4, 3, 3)."""
    each = size // nrfiles
    extra = (size - each * nrfiles) // bs
    return [each + (bs if i < extra else 0) for i in range(nrfiles)]
