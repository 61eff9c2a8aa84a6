"""Shared fixtures: a seeded generator and the real-data root (tests skip cleanly without it)."""

from __future__ import annotations

import numpy as np
import pytest

from dpadapt.datasets import find_data_root


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261123)


@pytest.fixture(scope="session")
def data_root():
    """The benchmark data folder; skips the test when ../shared/data (or $DPADAPT_DATA) is absent."""
    root = find_data_root(required=False)
    if root is None:
        pytest.skip("real benchmark data not available (../shared/data or $DPADAPT_DATA)")
    return root
