"""Host facts for the session header: what machine produced these numbers."""

from __future__ import annotations

import os
import platform
import socket
from typing import Any


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_facts() -> dict[str, Any]:
    """A JSON-safe dict of host facts (cheap: no probing, no network)."""
    import psutil  # ~8 ms: when a recording starts, not with every recorder import

    vm = psutil.virtual_memory()
    return {
        "hostname": socket.gethostname(),
        "system": platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "logical_cpus": psutil.cpu_count(logical=True),
        "physical_cpus": psutil.cpu_count(logical=False),
        "memory_bytes": vm.total,
        "python": platform.python_version(),
        "euid": os.geteuid() if hasattr(os, "geteuid") else None,
    }
