"""Model files: the same files `reservoir fit` writes and `reservoir predict` reads."""

from __future__ import annotations

import os

import numpy as np

from . import _engine
from ._estimators import ESNClassifier, ESNRegressor


def save(estimator, path):
    """Writes a fitted `ESNRegressor` or `ESNClassifier` to `path` (atomically: a failed
    save leaves an existing file as it was)."""
    model = getattr(estimator, "model_", None)
    if model is None:
        raise ValueError(f"{type(estimator).__name__} is not fitted; nothing to save")
    model.save(os.fspath(path))


def load(path):
    """A fitted estimator from a model file written by `save` or by `reservoir fit`: an
    `ESNRegressor` for a series model, an `ESNClassifier` for a sequence classifier. Its
    reservoir parameters are the file's; the readout's `ridge` and `washout` are not stored,
    so they keep their defaults (they matter only to a new `fit`)."""
    model = _engine.load(os.fspath(path))
    params = dict(model.reservoir_params)
    params.pop("input_size", None)
    if isinstance(model, _engine.ClassifierModel):
        features = model.feature_params
        estimator = ESNClassifier(
            **params,
            features=list(features["summaries"]),
            last_k=features["last_k"],
            warmup=features["warmup"],
        )
        estimator._adopt(model, np.array(model.classes))
    else:
        estimator = ESNRegressor(**params)
        estimator.model_ = model
        estimator.n_features_in_ = len(model.input_columns)
        estimator.n_outputs_ = len(model.target_columns)
        estimator._flat = False
    return estimator
