"""Files shared with the command line: model files (`reservoir fit` writes them and
`reservoir predict` reads them) and sequence data files (what `reservoir fit` reads)."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from . import _engine
from ._estimators import ESNClassifier, ESNRegressor, _labels_from_names


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
    so they keep their defaults (they matter only to a new `fit`). A classifier gives its
    classes back in the labels' dtype it was fitted on (text for a command-line model); a
    series model keeps the state the fit ended in (`predict(X, continue_state=True)`)."""
    model = _engine.load(os.fspath(path))
    params = dict(model.reservoir_params)
    params.pop("input_size", None)
    described = dict(model.model_params)
    kind = described.pop("reservoir")
    nvar = described.pop("nvar")
    params.update(kind=kind, nvar=nvar if kind == "nvar" else None, **described)
    if isinstance(model, _engine.ClassifierModel):
        # Output links belong to models of series.
        params.pop("feedback", None)
        params.pop("increments", None)
        features = model.feature_params
        estimator = ESNClassifier(
            **params,
            features=list(features["summaries"]),
            last_k=features["last_k"],
            warmup=features["warmup"],
            bidirectional=features["bidirectional"],
            components=features["components"],
            model_ridge=features["model_ridge"],
        )
        classes = _labels_from_names(model.classes, model.label_dtype)
        estimator._adopt(model, np.unique(classes))
        estimator.n_features_in_ = len(model.input_columns)
    else:
        estimator = ESNRegressor(**params)
        estimator.model_ = model
        estimator.n_features_in_ = len(model.input_columns)
        estimator.n_outputs_ = len(model.target_columns)
        estimator._flat = False
    return estimator


class SequenceData(NamedTuple):
    """Many sequences read from one file by `read_sequences`."""

    ids: list
    """One id per sequence: the sequence column's value (CSV, in order of first appearance),
    or the index along the first axis (NumPy)."""
    X: list
    """The inputs of each sequence, a float64 array of steps x channels."""
    y: list | None
    """The per-row targets of each sequence (steps x targets), when targets were asked for."""
    labels: np.ndarray | None
    """One label per sequence (as text), when a label was asked for."""
    input_names: list
    """The input columns' names (NumPy: the inputs array's name and the channel index)."""
    target_names: list
    """The target columns' names, empty without targets."""


def _names(names):
    """Column or array names as a list (one name may be given as a string)."""
    if names is None:
        return None
    return [names] if isinstance(names, str) else list(names)


def read_sequences(path, inputs, targets=None, label=None, sequence=None, time=None, lengths=None):
    """Reads many sequences from `path` exactly as `reservoir fit` reads its `--train` file:
    a long-form CSV file (one row per step; `sequence` names the column of each row's
    sequence, `time` an optional column ordering the rows of a sequence) or a NumPy file by
    its extension (`.npy`: the inputs array; `.npz`: `inputs` names the inputs array,
    `targets`, `label` and `lengths` other arrays). `inputs` and `targets` are column names
    (CSV) or one array name (`.npz`). Every value is checked as the command line checks it,
    and an error names the file and the line, column or array at fault."""
    ids, X, y, labels, input_names, target_names = _engine.read_sequences(
        os.fspath(path),
        _names(inputs),
        _names(targets),
        label,
        sequence,
        time,
        lengths,
    )
    return SequenceData(
        ids,
        X,
        y,
        None if labels is None else np.array(labels),
        input_names,
        target_names,
    )
