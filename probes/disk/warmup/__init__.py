"""The volume warm-up: a full, parallel, observable and resumable pass.

Contract (``WarmupProbe(settings)``, settings: ``warmup.settings.WarmupSettings``):
- Passes: "read" (default; keeps data), "write" (destroys data), both in
  that order ("write+read"), and the time-based "randwrite" pattern (the
  fresh-SSD curve). A pass that writes is refused whatever the flags for a
  device in use (``refusals.write_refusals``); past those refusals it needs
  ``settings.confirmed``, else ``prepare`` raises ``ConfirmationRequired``.
  ``verify`` makes the read pass check the offset stamp every write pass
  puts in each 512-byte sector.
- Sequential passes keep a ``Checkpoint`` (probes/disk/warmup/checkpoint.py) saved at
  least every 0.5 s with the device identity, pass, block size, range and
  done extents; ``resume`` continues from it (refused for another device,
  pass, block size or range). Only completed I/Os count as done, so after
  Ctrl-C, SIGHUP or kill -9 a resume redoes at most the last 0.5 s of work
  plus what was in flight.
- One Sample per interval (``records.WarmupInterval``): MB/s and IOPS of that
  interval, bytes done and total, progress %, ETA, a done map (64 cells,
  fraction done each) and the plateau state (probes/disk/warmup/steady.py, fio's
  criteria).
- In-pass I/O errors stop the pass: the checkpoint is saved, then a
  ProbeError says what happened (disk full, I/O error) and what to do.
- ``summary()``: the total (target, pass, outcome, bytes, total_bytes,
  seconds, bw_bytes, iops, complete, resumed_from, plateau, intervals,
  fio_command) and a row per pass (``passes``: the same figures for one
  pass, its plateau and an outcome derived from the bytes it did:
  probes/disk/warmup/passes.py), docs/warmup.md; ``run_summary()`` the typed
  ``WarmupSummary``.

How the code is split: one module per job, each with one public entry, and
``probe.WarmupProbe`` a thin coordinator that runs them in order:

- ``safety.check_target``: target and safety (resolve the target and range,
  the refusals no flag overrides, the confirmation);
- ``layout.PassLayout``: how a pass covers the range (the engine plan, the
  done map, the same coverage as an fio command);
- ``pass_engine.PassEngine``: runs one pass's I/O workers, wakes every tick
  and every interval, and says how the pass ended;
- ``checkpointing.CheckpointKeeper``: which checkpoint file, resume or refuse
  to clobber, saves;
- ``plateau.PlateauWatch``: fio's steady-state detection, afresh per pass;
- ``summary.RunTotals``: what the run adds up to, per pass and in total
  (the report's figures);
- ``verdict.judge``: what the passes found, the case and the verdict.

Beside them, the warm-up's own data and text (no other module uses them):
``settings`` (``WARMUP_SPEC``, ``WarmupSettings``), ``records`` (its samples
and parameters), ``passes`` (per-pass figures, findings, the typed summary),
``report`` (text, JSON, exit status), ``metrics`` (its Prometheus tracker),
``commands`` (the fix and resume
commands a report offers), ``checkpoint`` (the file format),
``steady`` (fio's steady-state detector). What it shares with ``iops``
stays in probes/disk/ (targets, refusals, the engine, block map, holes,
the kernel's view).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probetop.probes.disk.warmup.probe import WarmupProbe


def __getattr__(name: str) -> Any:
    """``WarmupProbe`` on first use: it brings numpy and the I/O engine, and
    the front door imports this package's light modules (settings, records,
    report) for ``probetop --help``."""
    if name == "WarmupProbe":
        from probetop.probes.disk.warmup.probe import WarmupProbe

        globals()[name] = WarmupProbe
        return WarmupProbe
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["WarmupProbe"]
