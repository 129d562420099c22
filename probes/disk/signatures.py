"""Partition tables and filesystem signatures in a device's first bytes.

Contract: ``signatures_in(buf)`` names every known signature in a buffer of
the device's first ``SIGNATURE_SCAN_BYTES``; ``data_signatures(path)`` reads
that much from a target. Any hit means a write needs a typed confirmation
(docs/disk-safety.md). Reads only.
"""

from __future__ import annotations

import os

from probetop.probes.core.base import TargetProbeError
from probetop.probes.disk.blockdev import identify

# Enough to cover every signature below (btrfs superblock at 64 KiB, swap at
# page size - 10 for pages up to 64 KiB).
SIGNATURE_SCAN_BYTES = 128 * 1024


def _at(buf: bytes, offset: int, magic: bytes) -> bool:
    return buf[offset : offset + len(magic)] == magic


def _ext_flavour(buf: bytes) -> str:
    """ext2, ext3 or ext4 from the superblock feature flags (like blkid does)."""
    sb = 1024
    compat = int.from_bytes(buf[sb + 0x5C : sb + 0x60], "little")
    incompat = int.from_bytes(buf[sb + 0x60 : sb + 0x64], "little")
    ext4_incompat = 0x0040 | 0x0080 | 0x0200  # extents, 64bit, flex_bg
    if incompat & ext4_incompat:
        return "ext4"
    if compat & 0x0004:  # has_journal
        return "ext3"
    return "ext2"


def signatures_in(buf: bytes) -> list[str]:
    """Signatures found in the first bytes of a device or image (pure; see data_signatures)."""
    found: list[str] = []
    fat = _at(buf, 54, b"FAT12   ") or _at(buf, 54, b"FAT16   ") or _at(buf, 82, b"FAT32   ")
    ntfs = _at(buf, 3, b"NTFS    ")
    boot_sig = _at(buf, 510, b"\x55\xaa")
    if ntfs:
        found.append("ntfs filesystem ('NTFS' at byte 3)")
    elif fat:
        found.append("vfat filesystem ('FATnn' at byte 54/82)")
    elif boot_sig:
        found.append("dos (MBR) partition table (0x55AA at byte 510)")
    for lbs in (512, 4096):
        if _at(buf, lbs, b"EFI PART"):
            found.append(f"gpt partition table ('EFI PART' at byte {lbs})")
    if _at(buf, 1080, b"\x53\xef"):
        found.append(f"{_ext_flavour(buf)} filesystem (magic 0xEF53 at byte 1080)")
    if _at(buf, 0, b"XFSB"):
        found.append("xfs filesystem ('XFSB' at byte 0)")
    if _at(buf, 65600, b"_BHRfS_M"):
        found.append("btrfs filesystem ('_BHRfS_M' at byte 65600)")
    if _at(buf, 0, b"LUKS\xba\xbe"):
        found.append("LUKS encrypted volume ('LUKS\\xba\\xbe' at byte 0)")
    if _at(buf, 512, b"LABELONE") and _at(buf, 536, b"LVM2 001"):
        found.append("LVM2 physical volume ('LABELONE' at byte 512)")
    if _at(buf, 4096, b"\xfc\x4e\x2b\xa9"):
        found.append("Linux RAID (md v1.2) member (magic 0xa92b4efc at byte 4096)")
    if _at(buf, 32769, b"CD001"):
        found.append("iso9660 filesystem ('CD001' at byte 32769)")
    for page in (4096, 8192, 16384, 65536):
        for magic in (b"SWAPSPACE2", b"SWAP-SPACE"):
            if _at(buf, page - 10, magic):
                found.append(f"swap area ('{magic.decode()}' at byte {page - 10})")
    return found


def data_signatures(path: str | os.PathLike[str]) -> list[str]:
    """Partition tables and filesystem signatures at the start of ``path``.

    A non-empty list means the target holds data someone may want: a write needs
    a typed confirmation naming the device. Raises TargetProbeError for a bad
    target or a read error.
    """
    ident = identify(path)
    try:
        fd = os.open(ident.path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise TargetProbeError(
            f"{ident.path}: cannot open to check for data: {exc.strerror}"
        ) from None
    try:
        chunks, offset = [], 0
        while offset < SIGNATURE_SCAN_BYTES:
            chunk = os.pread(fd, SIGNATURE_SCAN_BYTES - offset, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
    except OSError as exc:
        raise TargetProbeError(f"{ident.path}: read error while checking for data: {exc}") from None
    finally:
        os.close(fd)
    return signatures_in(b"".join(chunks))
