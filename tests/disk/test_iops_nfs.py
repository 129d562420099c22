"""The EFS/NFS method (issue 26): 1-byte O_DIRECT + O_SYNC writes where the
kernel allows them, one file per job, and the NFS client's view of the mount.

- The O_DIRECT alignment comes from the kernel: on this kernel tmpfs takes
  1-byte O_DIRECT as NFS does (the run goes ahead), ext4 states 512 bytes
  through statx (the run is refused, naming 512).
- The mountstats reader is checked against nfs-utils' own nfsiostat on the
  same text: tests/disk/data/mountstats-nfs4-{before,after}.txt, written in
  the kernel's layout (fs/nfs/super.c nfs_show_stats, net/sunrpc/stats.c
  rpc_clnt_show_stats, statvers 1.1). They are not a capture: no kernel this
  suite ran on so far had an NFS client (see the export test's skip).
- A real export over loopback (nfs-kernel-server exporting a directory under
  /tmp to 127.0.0.1, mounted on a unique mount point, removed afterwards)
  where the kernel has NFS; it skips saying why where it does not.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from disk_fixtures import run_cli, summary_of
from probetop.probes.disk.dioalign import dio_alignment
from probetop.probes.disk.nfsstats import nfs_view, parse

DATA = Path(__file__).parent / "data"
NFSIOSTAT = "/usr/sbin/nfsiostat"
MOUNT = "/tmp/diskio-mnt"


def _nfsiostat_module() -> dict:
    """nfs-utils' nfsiostat, its definitions only (the file runs its main at
    the end, under a "# Main" comment)."""
    path = shutil.which("nfsiostat") or NFSIOSTAT
    if not os.path.exists(path):
        # The one skip here that a package does fix: the snapshots are text,
        # compared with nfsiostat's parser; no NFS client is involved.
        pytest.skip(
            "nfsiostat (nfs-common) is not installed: it is the reference this reader is "
            "compared with on the text snapshots in tests/disk/data, which need no NFS client "
            "in the kernel (its script alone will do: on PATH, or at /usr/sbin/nfsiostat)"
        )
    source = Path(path).read_text()
    head = source[: source.index("# Main")]
    namespace: dict = {"__name__": "nfsiostat"}
    exec(compile(head, path, "exec"), namespace)
    return namespace


def _nfsiostat_figures(ns: dict, op: str, seconds: float) -> list[str]:
    """nfsiostat's printed row for ``op`` over the window between the two files."""
    old, new = ns["DeviceData"](), ns["DeviceData"]()
    old.parse_stats(ns["parse_stats_file"](str(DATA / "mountstats-nfs4-before.txt"))[MOUNT])
    new.parse_stats(ns["parse_stats_file"](str(DATA / "mountstats-nfs4-after.txt"))[MOUNT])
    diff = new.compare_iostats(old)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        diff._DeviceData__print_rpc_op_stats(op, seconds)
    _header, values = out.getvalue().splitlines()
    return values.replace("(", " ").replace(")", " ").split()


@pytest.mark.parametrize("op", ["WRITE", "COMMIT", "GETATTR"])
def test_mountstats_reader_agrees_with_nfsiostat(op: str) -> None:
    ns = _nfsiostat_module()
    before = parse((DATA / "mountstats-nfs4-before.txt").read_text())
    after = parse((DATA / "mountstats-nfs4-after.txt").read_text())
    assert list(after) == [MOUNT]  # ext4, proc and tmpfs mounts are skipped
    assert after[MOUNT].export == "127.0.0.1:/tmp/diskio-export"
    assert after[MOUNT].fstype == "nfs4" and after[MOUNT].age_s == 62
    seconds = 2.0
    ours = nfs_view(before[MOUNT], after[MOUNT], seconds)[op]
    theirs = _nfsiostat_figures(ns, op, seconds)
    # ops/s, kB/s, kB/op, retrans (count, %), avg RTT, avg exe, avg queue, errors (count, %)
    assert theirs[0] == f"{ours.ops_per_s:.3f}"
    assert theirs[1] == f"{ours.kb_per_s:.3f}"
    assert theirs[2] == f"{ours.kb_per_op:.3f}"
    assert theirs[3] == f"{ours.retrans:.0f}" and theirs[4] == f"{ours.retrans_pct:.1f}%"
    assert theirs[5] == f"{ours.avg_rtt_ms:.3f}"
    assert theirs[6] == f"{ours.avg_exe_ms:.3f}"
    assert theirs[7] == f"{ours.avg_queue_ms:.3f}"
    assert theirs[8] == f"{ours.errors:.0f}"


def test_only_ops_that_ran_are_shown() -> None:
    before = parse((DATA / "mountstats-nfs4-before.txt").read_text())[MOUNT]
    after = parse((DATA / "mountstats-nfs4-after.txt").read_text())[MOUNT]
    view = nfs_view(before, after, 2.0)
    assert set(view) == {"WRITE", "COMMIT", "GETATTR"}  # LOOKUP, OPEN ... did not run
    assert view["WRITE"].ops_per_s == 10_000.0
    assert view["WRITE"].avg_rtt_ms == pytest.approx(8000 / 20000)
    # A mount first seen now: counts since the mount, as nfsiostat's first report.
    assert nfs_view(None, after, 62.0)["LOOKUP"].ops_per_s == pytest.approx(42 / 62)


def test_malformed_lines_are_skipped() -> None:
    text = (
        "device srv:/x mounted on /m with fstype nfs statvers=1.0\n"
        "\tage:\tsoon\n\tper-op statistics\n\t  READ: 1 2 x 4 5 6 7 8\n"
        "\t WRITE: 3 3 0 300 60 1 9 12\n\t SHORT: 1 2\n"
        "device srv2:/y mounted on /n with fstype nfs4\n"
    )
    mounts = parse(text)
    assert set(mounts) == {"/m", "/n"}
    assert set(mounts["/m"].ops) == {"WRITE"} and mounts["/m"].ops["WRITE"].errors is None


# -- O_DIRECT where the kernel allows it -------------------------------------


def _unaligned_direct_dir() -> Path:
    """A tmpfs directory where the kernel takes 1-byte O_DIRECT, as NFS does."""
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm")
    align = dio_alignment("/dev/shm")
    if align is None or align.offset != 1:
        pytest.skip(f"this kernel's tmpfs does not take 1-byte O_DIRECT ({align})")
    return Path(tempfile.mkdtemp(prefix="diskio-efs-", dir="/dev/shm"))


def test_one_byte_direct_sync_writes_run_where_the_kernel_takes_them() -> None:
    """The EFS method on a filesystem without a block device that accepts
    unaligned O_DIRECT: 20 writers, one file each, O_DIRECT + O_SYNC."""
    directory = _unaligned_direct_dir()
    try:
        proc = run_cli(
            ["iops", str(directory), "--jobs", "20", "--size", "4k", "--rw", "write",
             "--bs", "1", "--direct", "--sync", "--time", "1", "--json"]
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        summary = summary_of(proc.stdout)
        assert summary["params"]["direct"] is True and summary["params"]["sync"] is True
        assert summary["write"]["total_ios"] > 20
        names = sorted(p.name for p in directory.iterdir())
        assert names == sorted(f"probetop.{j}.0" for j in range(20))  # fio's default names
        assert f"--directory={directory}" in summary["fio_command"]
        assert "--bs=1 " in summary["fio_command"] and "--direct=1" in summary["fio_command"]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_filename_format_names_each_jobs_file() -> None:
    directory = _unaligned_direct_dir()
    try:
        proc = run_cli(
            ["iops", str(directory), "--jobs", "3", "--size", "4k", "--rw", "write", "--bs", "1",
             "--direct", "--filename-format", "w$jobnum-$jobname", "--time", "0.5", "--json"]
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert sorted(p.name for p in directory.iterdir()) == [
            "w0-probetop", "w1-probetop", "w2-probetop"
        ]  # fmt: skip
        for bad, message in (
            (["--filename-format", "same"], "$jobnum"),
            (["--filename-format", "w$jobnum", "--nrfiles", "2", "--bs", "1"], "$filenum"),
        ):
            refused = run_cli(["iops", str(directory), "--jobs", "3", "--size", "4k", *bad])
            assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_direct_io_is_refused_only_where_the_kernel_refuses(tmp_path: Path) -> None:
    """ext4 states its O_DIRECT alignment (statx DIOALIGN, 512 here): 1-byte
    O_DIRECT is refused there, naming the kernel's figure."""
    align = dio_alignment(str(tmp_path))
    if align is None or align.source != "statx":
        pytest.skip(f"{tmp_path} is not on a filesystem that states DIOALIGN ({align})")
    proc = run_cli(
        ["iops", str(tmp_path / "f.img"), "--size", "4k", "--rw", "write", "--bs", "1",
         "--direct", "--time", "1"]
    )  # fmt: skip
    assert proc.returncode == 2
    assert f"multiples of {align.offset} bytes" in proc.stderr, proc.stderr


# -- a real NFS export over loopback -----------------------------------------


def _kernel_filesystems(load: tuple[str, ...] = ()) -> list[str]:
    """/proc/filesystems' names, after asking modprobe for ``load`` where
    the kernel has modules to load (no /lib/modules: nothing to ask)."""
    if load and shutil.which("modprobe") and Path("/lib/modules", os.uname().release).is_dir():
        for module in load:
            subprocess.run(["modprobe", module], capture_output=True, check=False)
    return Path("/proc/filesystems").read_text().split()


def _nfs_unavailable() -> str | None:
    """Why no loopback NFS export can be made here, the first reason first:
    the kernel (no package can add an NFS client to it), then root, then the
    tools (nfs-kernel-server, nfs-common), then the kernel's NFS server."""
    release = os.uname().release
    filesystems = _kernel_filesystems(("nfs", "nfsd") if os.geteuid() == 0 else ())
    if "nfs" not in filesystems and "nfs4" not in filesystems:
        modules = Path("/lib/modules", release)
        return (
            f"the kernel ({release}) has no NFS client: no nfs or nfs4 in /proc/filesystems"
            + ("" if modules.is_dir() else f" and no {modules} to load it from")
            + " (a kernel built without NFS, or a container that may not load modules); "
            "installing nfs-common or nfs-kernel-server cannot change that"
        )
    if os.geteuid() != 0:
        return "needs root to export and mount NFS"
    for tool in ("exportfs", "rpc.nfsd", "mount.nfs"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (nfs-kernel-server, nfs-common)"
    if "nfsd" not in filesystems:
        return f"the kernel ({release}) has an NFS client but no NFS server (nfsd)"
    return None


@contextlib.contextmanager
def nfs_export() -> Iterator[Path]:
    """A directory under /tmp exported to 127.0.0.1 and mounted over loopback
    on a unique mount point; unmounted, unexported and removed afterwards."""
    why = _nfs_unavailable()
    if why:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:8]
    export = Path(tempfile.mkdtemp(prefix=f"diskio-nfs-export-{tag}-", dir="/tmp"))
    mount = Path(tempfile.mkdtemp(prefix=f"diskio-nfs-mnt-{tag}-", dir="/tmp"))
    started_nfsd = False
    exported = mounted = False
    try:
        if not os.path.ismount("/proc/fs/nfsd"):
            subprocess.run(["mount", "-t", "nfsd", "nfsd", "/proc/fs/nfsd"], check=False)
        threads = Path("/proc/fs/nfsd/threads")
        if not threads.exists() or threads.read_text().strip() in ("", "0"):
            subprocess.run(["rpcbind"], check=False, capture_output=True)
            subprocess.run(["rpc.nfsd", "2"], check=True, capture_output=True)
            started_nfsd = True
        subprocess.run(
            ["exportfs", "-o", f"rw,no_root_squash,insecure,sync,fsid={int(tag, 16) % 100000 + 1}",
             f"127.0.0.1:{export}"],
            check=True, capture_output=True,
        )  # fmt: skip
        exported = True
        proc = subprocess.run(
            ["mount", "-t", "nfs4", "-o", "vers=4.2,proto=tcp,timeo=50,retrans=1",
             f"127.0.0.1:{export}", str(mount)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if proc.returncode != 0:
            pytest.skip(f"mounting the loopback export failed: {proc.stderr.strip()}")
        mounted = True
        yield mount
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mount)], check=False)
        if exported:
            subprocess.run(["exportfs", "-u", f"127.0.0.1:{export}"], check=False)
        if started_nfsd:
            subprocess.run(["rpc.nfsd", "0"], check=False)
        shutil.rmtree(export, ignore_errors=True)
        with contextlib.suppress(OSError):
            mount.rmdir()


def test_efs_method_on_a_real_nfs_export() -> None:
    """1-byte O_DIRECT + O_SYNC writes at offset 0, 1 then 20 writers with a
    file each, on NFS: the kernel takes them, and the NFS view counts at
    least the WRITE operations probetop made."""
    with nfs_export() as mount:
        assert dio_alignment(str(mount)) is not None
        for jobs in (1, 20):
            directory = mount / f"w{jobs}"
            directory.mkdir()
            proc = run_cli(
                ["iops", str(directory), "--jobs", str(jobs), "--size", "1", "--rw", "write",
                 "--bs", "1", "--direct", "--sync", "--time", "2", "--json"], timeout=120,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            summary = summary_of(proc.stdout)
            assert summary["params"]["direct"] is True
            writes = summary["write"]["total_ios"]
            assert writes > 0
            ops = summary["nfs"]["ops"]
            assert ops["WRITE"]["ops_per_s"] * summary["runtime_ms"] / 1000 >= 0.9 * writes
