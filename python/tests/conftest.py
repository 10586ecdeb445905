"""Shared fixtures: small seeded datasets, and the `reservoir` command when it is built."""

import os
import pathlib
import shutil

import numpy as np
import pytest

import reservoir

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def narma():
    """NARMA-10, 3000 rows: inputs and targets (T x 1)."""
    return reservoir.tasks.narma10(3000, seed=1)


@pytest.fixture(scope="session")
def labelled():
    """120 ragged sequences of 3 channels whose class is the sign of channel 0's mean."""
    rng = np.random.default_rng(7)
    X = [rng.normal(size=(int(rng.integers(20, 40)), 3)) for _ in range(120)]
    for x in X:
        x[:, 0] += rng.choice([-0.7, 0.7])
    y = np.array(["up" if x[:, 0].mean() > 0 else "down" for x in X])
    return X, y


@pytest.fixture(scope="session")
def cli():
    """The `reservoir` command: $RESERVOIR_BIN, target/release/reservoir or the PATH."""
    candidates = [
        os.environ.get("RESERVOIR_BIN"),
        str(ROOT / "target" / "release" / "reservoir"),
        shutil.which("reservoir"),
    ]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("the reservoir command is not built (cargo build --release -p reservoir-cli)")
