"""Write-pass safety on real loop devices: refusals whatever the flags, and the
confirmation that must name the target."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator

import pytest
from disk_fixtures import loop_device, run_cli
from probetop.probes.core.base import ProbeError
from probetop.probes.disk import WarmupProbe, WarmupSettings


def _write(dev: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["warmup", dev, "--write", f"--yes-destroy-data={dev}", "--json", *extra])


@contextlib.contextmanager
def _mounted_ext4(dev: str, where: str) -> Iterator[None]:
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    proc = subprocess.run(["mount", dev, where], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount ext4 here: {proc.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", where], check=False)


def test_mounted_device_is_refused_even_with_the_confirmation(tmp_path):
    with loop_device(32 << 20) as dev, _mounted_ext4(dev, str(tmp_path)):
        proc = _write(dev)
        assert proc.returncode == 2
        assert "mounted on" in proc.stderr and str(tmp_path) in proc.stderr


def test_active_swap_is_refused():
    with loop_device(32 << 20) as dev:
        subprocess.run(["mkswap", dev], check=True, capture_output=True)
        on = subprocess.run(["swapon", dev], capture_output=True, text=True)
        if on.returncode != 0:
            pytest.skip(f"swapon not allowed here: {on.stderr.strip()}")
        try:
            with pytest.raises(ProbeError, match="swap"):
                WarmupProbe(WarmupSettings(dev, pass_name="write", confirmed=True)).prepare()
        finally:
            subprocess.run(["swapoff", dev], check=False)


def test_device_held_by_device_mapper_is_refused():
    with loop_device(32 << 20) as dev:
        name = f"probetop-test-{dev.rsplit('/', 1)[-1]}"
        table = f"0 {(32 << 20) // 512} linear {dev} 0"
        made = subprocess.run(["dmsetup", "create", name, "--table", table], capture_output=True)
        if made.returncode != 0:
            pytest.skip(f"dmsetup not usable here: {made.stderr.decode().strip()}")
        try:
            with pytest.raises(ProbeError, match="held by"):
                WarmupProbe(WarmupSettings(dev, pass_name="write", confirmed=True)).prepare()
        finally:
            subprocess.run(["dmsetup", "remove", name], check=False)


def test_filesystem_signature_needs_the_confirmation_to_name_the_device(tmp_path):
    with loop_device(16 << 20) as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        unconfirmed = run_cli(["warmup", dev, "--write", "--json"])
        assert unconfirmed.returncode == 2
        assert f"--yes-destroy-data={dev}" in unconfirmed.stderr
        wrong = run_cli(["warmup", dev, "--write", "--yes-destroy-data=/dev/sda", "--json"])
        assert wrong.returncode == 2 and "does not name the target" in wrong.stderr
        confirmed = _write(dev, "--checkpoint", str(tmp_path / "c.json"))
        assert confirmed.returncode == 0, confirmed.stderr
        blkid = subprocess.run(["blkid", "-p", dev], capture_output=True, text=True)
        assert "ext4" not in blkid.stdout  # the signature is gone: it was really written


def test_read_pass_needs_no_confirmation_and_write_flag_alone_is_not_enough(tmp_path):
    target = tmp_path / "f.img"
    target.write_bytes(b"\0" * (1 << 20))
    with pytest.raises(ProbeError, match="destroys every byte"):
        WarmupProbe(WarmupSettings(str(target), pass_name="write")).prepare()
    WarmupProbe(WarmupSettings(str(target), checkpoint=str(tmp_path / "c.json"))).prepare()
