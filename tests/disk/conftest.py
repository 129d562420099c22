"""Fixtures shared by the disk tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def data_file(tmp_path):
    """A 4 MiB file of random bytes (not zeros: nothing may compress them)."""
    path = tmp_path / "data.img"
    with open(path, "wb") as f:
        f.write(os.urandom(4 << 20))
    return str(path)
