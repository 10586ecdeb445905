"""Hyper-parameter sweeps of an estimator on validation folds of its training sequences."""

from __future__ import annotations

import numpy as np

from . import _engine
from ._data import sequences, targets
from ._estimators import ESNClassifier, ESNRegressor


def sweep(
    estimator,
    X,
    y,
    *,
    spectral_radius=None,
    leak_rate=None,
    input_scaling=None,
    ridge=None,
    folds=None,
    validation=None,
    as_frame=False,
):
    """Scores every combination of the given values (lanes of spectral radius x leak rate x
    input scaling, each with every ridge, solved from the same sums) on validation folds of
    the training sequences, around the other parameters of `estimator` (an `ESNClassifier`
    or an `ESNRegressor`), as `reservoir sweep --train` does.

    Returns a dict: `results` (one dict per lane and ridge: `spectral_radius`, `leak_rate`,
    `input_scaling`, `ridge`, `score`; best first), `score` (what the score is:
    `validation_accuracy`, higher is better, or `validation_nrmse`, lower is better),
    `failures`, `backend` (where the lanes ran) and timings. With `as_frame=True` the
    results are a pandas DataFrame.
    """
    lanes = {
        "spectral_radius": spectral_radius,
        "leak_rate": leak_rate,
        "input_scaling": input_scaling,
        "ridge": ridge,
    }
    table = {k: [float(v) for v in np.atleast_1d(vs)] for k, vs in lanes.items() if vs is not None}
    if folds is not None:
        table["folds"] = folds
    if validation is not None:
        table["validation"] = validation
    params = {**estimator._tables(), "sweep": table}
    inputs = sequences(X)
    if isinstance(estimator, ESNClassifier):
        labels = [str(label) for label in np.asarray(y)]
        report = _engine.sweep(params, inputs.engine, labels=labels)
    elif isinstance(estimator, ESNRegressor):
        rows, _ = targets(y, inputs)
        report = _engine.sweep(params, inputs.engine, targets=rows)
    else:
        raise TypeError(
            "estimator: expected an ESNClassifier or an ESNRegressor, "
            f"got {type(estimator).__name__}"
        )
    if as_frame:
        import pandas

        report["results"] = pandas.DataFrame(report["results"])
    return report
