"""probes/core/numba_target.py: the native loops' modules fill numba's CPU
target without importing scipy.linalg (about 0.25 s of CPU that every IOPS,
warm-up and ICMP pane waited for), and scipy stays usable afterwards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None, reason="scipy is not installed: nothing to skip"
)

CHECK = """
import sys, threading
import {module}
assert "numba.np.arraymath" in sys.modules, "the target was not filled"
print("linalg loaded:", "scipy.linalg" in sys.modules)
# another thread, and this one afterwards, import it as usual
t = threading.Thread(target=lambda: __import__("scipy.linalg"))
t.start(); t.join()
import scipy.linalg
print("linalg usable:", hasattr(scipy.linalg, "solve"))
"""


@pytest.mark.parametrize("module", ["probetop.probes.disk.native", "probetop.probes.icmp.engine"])
def test_the_loops_module_loads_numbas_target_without_scipy_linalg(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK.format(module=module)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "linalg loaded: False" in out.stdout
    assert "linalg usable: True" in out.stdout


def test_a_loop_still_runs_after_it() -> None:
    """The disk loops' self-test (each engine once on a scratch file) passes
    with the target filled this way."""
    code = (
        "from probetop.probes.disk import selftest\n"
        "selftest.warm_up_kernels()\n"
        "import sys; print('linalg loaded:', 'scipy.linalg' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "linalg loaded: False" in out.stdout
