"""NVAR features: ReservoirPy's own `NVAR` gives the same values in the same order for the
same hyper-parameters; a series in parts gives the features of the whole."""

import numpy as np
import pytest

import reservoir
from reservoir import NVAR

CASES = [(2, 2, 1), (3, 2, 2), (2, 3, 1), (4, 1, 3)]  # (delay, order, strides)


@pytest.fixture(scope="module")
def lorenz():
    return reservoir.tasks.lorenz(400)


@pytest.mark.parametrize(("delay", "order", "strides"), CASES)
def test_the_features_are_reservoirpys(lorenz, delay, order, strides):
    rpy = pytest.importorskip("reservoirpy.nodes")
    theirs = rpy.NVAR(delay=delay, order=order, strides=strides).run(lorenz)
    ours = NVAR(delay, order, strides, input_size=3)
    features = ours.run(lorenz)
    assert features.shape == theirs.shape == (400, ours.width)
    # The same products of the same inputs in the same order: the same values.
    np.testing.assert_array_equal(features, theirs)


def test_a_series_in_parts_gives_the_features_of_the_whole(lorenz):
    whole = NVAR(3, 2, 2, input_size=3).run(lorenz)
    parts = NVAR(3, 2, 2, input_size=3)
    joined = np.vstack([parts.run(lorenz[:150]), parts.run(lorenz[150:])])
    np.testing.assert_array_equal(joined, whole)
    parts.reset()
    np.testing.assert_array_equal(parts.run(lorenz[:10]), whole[:10])


def test_bad_parameters_and_inputs_are_errors(lorenz):
    with pytest.raises(ValueError, match="nvar.delay"):
        NVAR(0, 2)
    with pytest.raises(TypeError, match="order: expected an integer"):
        NVAR(2, 2.0)
    with pytest.raises(ValueError, match="nvar.order"):
        NVAR(100, 5, input_size=10)
    with pytest.raises(ValueError, match="columns"):
        NVAR(2, 2, input_size=2).run(lorenz)
    bad = lorenz.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="row 5, column 1"):
        NVAR(2, 2, input_size=3).run(bad)
