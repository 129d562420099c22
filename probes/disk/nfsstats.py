"""The NFS client's view of a mount, from /proc/self/mountstats, as nfsiostat
(nfs-utils) prints it: per RPC operation ops/s, kB/s, kB/op, retransmissions,
avg RTT, avg exe and avg queue time (ms).

Contract:
- ``parse(text)`` -> {mount point: ``NfsMount``} for every nfs/nfs4 mount in
  a mountstats text (other mounts are skipped). The kernel writes per-op
  lines ``OP: ops transmissions major_timeouts bytes_sent bytes_recv
  queue_ms rtt_ms execute_ms [errors]`` (statvers 1.1 adds errors).
- ``read_mount(point)`` the current ``NfsMount`` of one mount point, or None.
- ``nfs_view(before, after, seconds)`` -> {op: ``OpRates``} over the window,
  computed as nfsiostat does (deltas; per-op averages over the window's ops),
  for ops that ran; ``as_dict`` gives the JSON object.
Pure reads: a vanished mount gives None, malformed lines are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MOUNTSTATS = "/proc/self/mountstats"
NFS_TYPES = ("nfs", "nfs4")


@dataclass(frozen=True, slots=True)
class OpCounters:
    """One RPC operation's cumulative counters (kernel's units: ms, bytes)."""

    ops: int
    transmissions: int
    major_timeouts: int
    bytes_sent: int
    bytes_recv: int
    queue_ms: int
    rtt_ms: int
    execute_ms: int
    errors: int | None = None  # statvers 1.1


@dataclass
class NfsMount:
    export: str
    point: str
    fstype: str
    statvers: str = ""
    age_s: int = 0
    ops: dict[str, OpCounters] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OpRates:
    """One operation over a window, nfsiostat's columns."""

    ops_per_s: float
    kb_per_s: float
    kb_per_op: float
    retrans: int
    retrans_pct: float
    avg_rtt_ms: float
    avg_exe_ms: float
    avg_queue_ms: float
    errors: int | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "ops_per_s": self.ops_per_s,
            "kb_per_s": self.kb_per_s,
            "kb_per_op": self.kb_per_op,
            "retrans": self.retrans,
            "retrans_pct": self.retrans_pct,
            "avg_rtt_ms": self.avg_rtt_ms,
            "avg_exe_ms": self.avg_exe_ms,
            "avg_queue_ms": self.avg_queue_ms,
            "errors": self.errors,
        }


def parse(text: str) -> dict[str, NfsMount]:
    """See the module docstring."""
    mounts: dict[str, NfsMount] = {}
    current: NfsMount | None = None
    in_ops = False
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "device":
            # device EXPORT mounted on POINT with fstype TYPE [statvers=X]
            current, in_ops = None, False
            if len(words) >= 8 and words[2:4] == ["mounted", "on"] and words[7] in NFS_TYPES:
                vers = words[8].partition("=")[2] if len(words) > 8 else ""
                current = NfsMount(words[1], words[4], words[7], vers)
                mounts[current.point] = current
            continue
        if current is None:
            continue
        if words[0] == "age:" and len(words) > 1 and words[1].isdigit():
            current.age_s = int(words[1])
        elif words[0] == "per-op":
            in_ops = True
        elif in_ops and words[0].endswith(":") and len(words) >= 9:
            try:
                values = [int(w) for w in words[1:10]]
            except ValueError:
                continue
            ops, trans, timeouts, sent, recv, queue, rtt, execute = values[:8]
            current.ops[words[0][:-1]] = OpCounters(
                ops, trans, timeouts, sent, recv, queue, rtt, execute,
                errors=values[8] if len(values) > 8 else None,
            )  # fmt: skip
    return mounts


def read_mount(point: str, path: str = MOUNTSTATS) -> NfsMount | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse(f.read()).get(point)
    except OSError:
        return None


def op_rates(before: OpCounters | None, after: OpCounters, seconds: float) -> OpRates:
    """One operation's window, as nfsiostat's ``__print_rpc_op_stats``."""
    b = before or OpCounters(0, 0, 0, 0, 0, 0, 0, 0, 0 if after.errors is not None else None)
    ops = after.ops - b.ops
    retrans = (after.transmissions - b.transmissions) - ops
    kilobytes = ((after.bytes_sent - b.bytes_sent) + (after.bytes_recv - b.bytes_recv)) / 1024
    errors = after.errors - (b.errors or 0) if after.errors is not None else None
    per = (lambda x: x / ops) if ops else (lambda x: 0.0)
    return OpRates(
        ops_per_s=ops / seconds if seconds > 0 else 0.0,
        kb_per_s=kilobytes / seconds if seconds > 0 else 0.0,
        kb_per_op=per(kilobytes),
        retrans=retrans,
        retrans_pct=per(retrans * 100),
        avg_rtt_ms=per(after.rtt_ms - b.rtt_ms),
        avg_exe_ms=per(after.execute_ms - b.execute_ms),
        avg_queue_ms=per(after.queue_ms - b.queue_ms),
        errors=errors,
    )


def nfs_view(before: NfsMount | None, after: NfsMount, seconds: float) -> dict[str, OpRates]:
    """Operations that ran in the window, nfsiostat's figures each."""
    out = {}
    for name, counters in after.ops.items():
        prev = before.ops.get(name) if before else None
        if counters.ops - (prev.ops if prev else 0) > 0:
            out[name] = op_rates(prev, counters, seconds)
    return out
