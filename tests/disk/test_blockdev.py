"""Device identity, write refusals and data signatures on real loop devices.

Root tests build their own loop devices over files in /dev/shm and tear every
layer down (umount, swapoff, dmsetup remove, losetup -d) even when a test fails.
"""

from __future__ import annotations

import os
import struct
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import IMAGE_BYTES, Layers, _mkfs_ext4, _run, _tool
from probetop.probes.core.base import TargetProbeError
from probetop.probes.disk import blockdev, mounts, refusals, signatures, sysfs

layers = disk_fixtures.layers  # the fixture, under the name tests ask for

_skip_unless_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root (loop devices, mount, swapon)"
)


def requires_root(test: Callable[..., None]) -> Callable[..., None]:
    """The house `root` marker (CI selects on it) plus a skip with a reason."""
    return pytest.mark.root(_skip_unless_root(test))


def _write_mbr_one_partition(image: Path, first_sector: int, sectors: int) -> None:
    """A dos partition table with one Linux partition (what sfdisk would write)."""
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", first_sector, sectors)
    with open(image, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")


def _wait_for(predicate: Callable[[], bool], seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _partition_of(layers: Layers, dev: str) -> str:
    """Make the kernel see partition 1 of a loop device (partx when the kernel has
    no dos partition parser) and return its /dev path."""
    part = f"{dev}p1"
    if not _wait_for(lambda: os.path.exists(part), 0.5):
        _run(_tool("partx"), "-a", dev)
    if not _wait_for(lambda: os.path.exists(part)):
        pytest.skip(f"the kernel did not create {part} (no partition support)")
    return part


# ----------------------------------------------------------------- bad targets (no root needed)


def test_missing_path_is_a_target_error(tmp_path: Path) -> None:
    with pytest.raises(TargetProbeError, match="no such file"):
        blockdev.identify(tmp_path / "nope")


def test_directory_is_a_target_error(tmp_path: Path) -> None:
    with pytest.raises(TargetProbeError, match="is a directory"):
        blockdev.identify(tmp_path)


def test_character_device_is_a_target_error() -> None:
    with pytest.raises(TargetProbeError, match="character device"):
        blockdev.identify("/dev/null")


def test_permission_denied_is_a_target_error(tmp_path: Path) -> None:
    """identify() as an unprivileged user on a file it may not read (a forked child
    drops to nobody when we are root)."""
    secret = tmp_path / "secret.img"
    secret.write_bytes(b"x" * 4096)
    secret.chmod(0o600 if os.geteuid() == 0 else 0)
    tmp_path.chmod(0o755)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report the outcome through the pipe, never return to pytest
        outcome = b"ALLOWED"
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            blockdev.identify(secret)
        except TargetProbeError as exc:
            outcome = f"REFUSED {exc}".encode()
        except BaseException as exc:
            outcome = f"ERROR {exc!r}".encode()
        os.write(write_end, outcome)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        out = pipe.read().decode()
    os.waitpid(pid, 0)
    assert out.startswith("REFUSED") and "permission denied" in out, out


def test_regular_file_identity_and_no_refusals(tmp_path: Path) -> None:
    target = tmp_path / "data.img"
    target.write_bytes(b"\0" * 8192)
    ident = blockdev.identify(target)
    assert ident.kind == "file"
    assert ident.size_bytes == 8192
    assert ident.dev is None and ident.serial is None
    assert ident.real_path == os.path.realpath(target)
    assert refusals.write_refusals(target) == []
    assert signatures.data_signatures(target) == []


def test_file_on_tmpfs_has_no_backing_disk() -> None:
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    path = Path("/dev/shm") / f"probetop-blockdev-{uuid.uuid4().hex}"
    path.write_bytes(b"x")
    try:
        assert mounts.backing_device(path) is None
    finally:
        path.unlink()


# ----------------------------------------------------------------- signatures in image files


def test_ext4_and_swap_signatures_in_image_files(tmp_path: Path) -> None:
    ext4 = tmp_path / "ext4.img"
    with open(ext4, "wb") as f:
        f.truncate(IMAGE_BYTES)
    _mkfs_ext4(ext4)
    assert any(s.startswith("ext4 filesystem") for s in signatures.data_signatures(ext4))

    swap = tmp_path / "swap.img"
    with open(swap, "wb") as f:
        f.truncate(IMAGE_BYTES)
    _run(_tool("mkswap"), str(swap))
    sigs = signatures.data_signatures(swap)
    assert any("swap area" in s for s in sigs), sigs


def test_ext2_is_not_reported_as_ext4(tmp_path: Path) -> None:
    image = tmp_path / "ext2.img"
    with open(image, "wb") as f:
        f.truncate(IMAGE_BYTES)
    _run(_tool("mkfs.ext2"), "-q", "-F", str(image))
    assert any(s.startswith("ext2 filesystem") for s in signatures.data_signatures(image))


@pytest.mark.parametrize(
    ("offset", "magic", "expected"),
    [
        (0, b"XFSB", "xfs"),
        (65600, b"_BHRfS_M", "btrfs"),
        (0, b"LUKS\xba\xbe", "LUKS"),
        (512, b"EFI PART", "gpt"),
        (4096, b"EFI PART", "gpt"),
        (3, b"NTFS    ", "ntfs"),
        (82, b"FAT32   ", "vfat"),
        (510, b"\x55\xaa", "dos (MBR)"),
        (32769, b"CD001", "iso9660"),
    ],
)
def test_signature_offsets(offset: int, magic: bytes, expected: str) -> None:
    buf = bytearray(signatures.SIGNATURE_SCAN_BYTES)
    buf[offset : offset + len(magic)] = magic
    found = signatures.signatures_in(bytes(buf))
    assert len(found) == 1 and found[0].startswith(expected), found
    # One byte off must not match: the offsets are the contract.
    shifted = bytearray(signatures.SIGNATURE_SCAN_BYTES)
    shifted[offset + 1 : offset + 1 + len(magic)] = magic
    assert signatures.signatures_in(bytes(shifted)) == []


def test_fat_boot_sector_is_not_reported_as_a_partition_table() -> None:
    buf = bytearray(4096)
    buf[82:90] = b"FAT32   "
    buf[510:512] = b"\x55\xaa"
    assert [s.split()[0] for s in signatures.signatures_in(bytes(buf))] == ["vfat"]


def test_scsi_vpd_serial_page() -> None:
    page = bytes([0x00, 0x80, 0x00, 0x0C]) + b"  WD-WX1234\0\0"
    assert blockdev.vpd_unit_serial(page) == "WD-WX1234"
    assert blockdev.vpd_unit_serial(bytes([0x00, 0x83, 0x00, 0x02]) + b"ab") is None  # other page
    assert blockdev.vpd_unit_serial(bytes([0x00, 0x80, 0x00, 0x00])) is None  # empty serial
    assert blockdev.vpd_unit_serial(b"") is None


def test_short_image_is_scanned_without_error(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny"
    tiny.write_bytes(b"XFSB")
    assert [s.split()[0] for s in signatures.data_signatures(tiny)] == ["xfs"]


# ----------------------------------------------------------------- loop devices (root)


@requires_root
def test_clean_loop_device_is_allowed_and_identified(layers: Layers) -> None:
    image = layers.image()
    dev = layers.loop(image)
    ident = blockdev.identify(dev)
    assert ident.kind == "block"
    assert ident.size_bytes == IMAGE_BYTES
    assert ident.backing_file == str(image)
    assert ident.name == os.path.basename(dev)
    assert ident.logical_block_size == 512
    assert ident.dev == _run(_tool("lsblk"), "-dno", "MAJ:MIN", dev).strip()
    assert refusals.write_refusals(dev) == []
    assert signatures.data_signatures(dev) == []
    assert mounts.backing_device(dev) == os.path.basename(dev)
    assert not refusals._exclusively_claimed(dev)


@requires_root
def test_unmounted_ext4_loop_is_allowed_but_signed(layers: Layers) -> None:
    dev = layers.loop(layers.image())
    _mkfs_ext4(dev)
    assert refusals.write_refusals(dev) == []
    sigs = signatures.data_signatures(dev)
    assert any(s.startswith("ext4") for s in sigs), sigs
    assert _run(_tool("blkid"), "-o", "value", "-s", "TYPE", dev) == "ext4"


@requires_root
def test_mounted_loop_is_refused(layers: Layers) -> None:
    dev = layers.loop(layers.image())
    _mkfs_ext4(dev)
    point = layers.mount(dev)
    reasons = refusals.write_refusals(dev)
    assert any(f"mounted on {point}" in r for r in reasons), reasons
    assert refusals._exclusively_claimed(dev)
    # A file inside the mounted filesystem is counted on that loop device.
    inside = point / "file"
    inside.write_bytes(b"x")
    assert mounts.backing_device(inside) == os.path.basename(dev)


@requires_root
def test_mounted_partition_refuses_the_whole_disk(layers: Layers) -> None:
    image = layers.image()
    _write_mbr_one_partition(image, 2048, IMAGE_BYTES // 512 - 2048)
    dev = layers.loop(image, partscan=True)
    part = _partition_of(layers, dev)
    _mkfs_ext4(part)
    point = layers.mount(part)

    reasons = refusals.write_refusals(dev)
    assert any(f"partition {os.path.basename(part)} is mounted on {point}" in r for r in reasons), (
        reasons
    )
    assert any("mounted on" in r for r in refusals.write_refusals(part))
    assert any(s.startswith("dos (MBR)") for s in signatures.data_signatures(dev))

    ident = blockdev.identify(part)
    assert ident.name == os.path.basename(part)
    assert ident.size_bytes == IMAGE_BYTES - 2048 * 512
    assert ident.backing_file == str(image)  # a partition carries its disk's identity
    inside = point / "f"
    inside.write_bytes(b"x")
    assert mounts.backing_device(inside) == os.path.basename(dev)  # the whole disk


@requires_root
def test_device_mapper_holder_is_refused(layers: Layers) -> None:
    _tool("dmsetup")
    try:
        os.close(os.open("/dev/mapper/control", os.O_RDWR))
    except OSError as exc:
        pytest.skip(f"device-mapper is not available in this kernel ({exc.strerror})")
    dev = layers.loop(layers.image())
    name = layers.dm_linear(dev, IMAGE_BYTES // 512)
    reasons = refusals.write_refusals(dev)
    assert any("held by dm-" in r and name in r for r in reasons), reasons


@requires_root
def test_holders_the_kernel_lists_are_refused(
    layers: Layers, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where device-mapper and md are missing (this VM's kernel has neither),
    # nothing can create a real holder, so the test above skips. This one keeps
    # the rule covered on a real loop device: only the listing of its
    # holders/ directory is replaced, the rest of the check runs as is.
    dev = layers.loop(layers.image())
    name = os.path.basename(dev)
    real_holders = sysfs.holders

    def holders(sysdir: Path) -> list[str]:
        return ["dm-99"] if sysdir.name == name else real_holders(sysdir)

    monkeypatch.setattr(sysfs, "holders", holders)
    reasons = refusals.write_refusals(dev)
    assert any("held by dm-99" in r and "remove that first" in r for r in reasons), reasons
    monkeypatch.setattr(sysfs, "holders", real_holders)
    assert refusals.write_refusals(dev) == []


@requires_root
def test_active_swap_is_refused(layers: Layers) -> None:
    dev = layers.loop(layers.image())
    layers.swapon(dev)
    reasons = refusals.write_refusals(dev)
    assert any("active swap" in r for r in reasons), reasons
    assert any("swap area" in s for s in signatures.data_signatures(dev))


@requires_root
def test_loop_over_a_block_device_links_both_ways(layers: Layers) -> None:
    lower = layers.loop(layers.image())
    upper = layers.loop(Path(lower))  # losetup over a block device: no holder link
    reasons = refusals.write_refusals(lower)
    assert any(f"backing device of loop device {os.path.basename(upper)}" in r for r in reasons)
    assert refusals.write_refusals(upper) == []
    _mkfs_ext4(lower)
    point = layers.mount(lower)  # now the upper loop would write a mounted filesystem
    upper_reasons = refusals.write_refusals(upper)
    assert any("backing device" in r and f"mounted on {point}" in r for r in upper_reasons)


def test_root_device_is_refused() -> None:
    source = _run(_tool("findmnt"), "-no", "SOURCE", "/")
    if not source.startswith("/dev/") or not os.path.exists(source):
        pytest.skip(f"/ is not on a visible block device ({source})")
    reasons = refusals.write_refusals(source)
    assert any("root filesystem" in r for r in reasons), reasons
    # ... and its whole disk when / is on a partition.
    disk = mounts.backing_device("/")
    if disk and os.path.exists(f"/dev/{disk}"):
        assert any("root filesystem" in r for r in refusals.write_refusals(f"/dev/{disk}"))
