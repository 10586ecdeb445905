"""Echo-state estimators with scikit-learn conventions.

Every sequence runs from the zero state, in `fit` and in `predict`, so a prediction depends
only on its inputs: the estimators can be cloned, cross-validated and searched like any
scikit-learn estimator. `fit` validates the parameters (the constructor only stores
them), with the messages of the command line.
"""

from __future__ import annotations

import numpy as np

from . import _engine
from ._base import BaseEstimator, ClassifierMixin, RegressorMixin
from ._data import sequences, targets

_RESERVOIR_KEYS = (
    "size",
    "spectral_radius",
    "leak_rate",
    "input_scaling",
    "connection_prob",
    "input_connectivity",
    "bias_scaling",
    "noise_level",
    "activation",
    "weight_distribution",
    "precision",
    "seed",
)

_INTEGERS = ("size", "washout", "seed", "last_k", "warmup")
_FLOATS = (
    "spectral_radius",
    "leak_rate",
    "input_scaling",
    "connection_prob",
    "input_connectivity",
    "bias_scaling",
    "noise_level",
    "ridge",
)
_STRINGS = ("activation", "weight_distribution", "precision", "device", "gpu_matmul")


def _checked_type(name, value):
    """`value` unchanged, or a TypeError naming `name` when its type is wrong."""
    if name in _INTEGERS:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
        return int(value)
    if name in _FLOATS:
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
        return float(value)
    if name in _STRINGS and not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
    return value


class _EchoStateEstimator(BaseEstimator):
    """What both estimators share: the parameters as config tables, the input checks."""

    def _tables(self):
        get = lambda name: _checked_type(name, getattr(self, name))  # noqa: E731
        return {
            "device": get("device"),
            "devices": self.devices,
            "gpu_matmul": get("gpu_matmul"),
            "reservoir": {key: get(key) for key in _RESERVOIR_KEYS},
            "readout": {"ridge": get("ridge"), **self._readout_extra(get)},
            **self._extra_tables(get),
        }

    def _readout_extra(self, get):
        return {}

    def _extra_tables(self, get):
        return {}

    def _inputs(self, X):
        inputs = sequences(X)
        expected = getattr(self, "n_features_in_", None)
        if expected is not None and inputs.width != expected:
            raise ValueError(
                f"X has {inputs.width} channels, but {type(self).__name__} was fitted "
                f"with {expected}"
            )
        return inputs

    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise _not_fitted(self)


def _not_fitted(estimator):
    message = f"This {type(estimator).__name__} instance is not fitted yet; call 'fit' first."
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return AttributeError(message)
    return NotFittedError(message)


class ESNRegressor(RegressorMixin, _EchoStateEstimator):
    """An echo-state network with a ridge readout, predicting a value per time step.

    X is one series (T x K), a batch (B x T x K) or a list of series (T_i x K); y has the
    same layout with one target row per step (1-D per series for one target). Each series
    runs from the zero state; its first `washout` steps settle the reservoir and are left
    out of the fit. Parameters are those of the `[reservoir]` and `[readout]` config tables
    and the `device` key (`"auto"`, `"cpu"`, `"cuda"`, `"cuda:N"`); `devices` (`"all"` or a
    list of GPU indices) splits a large dense reservoir's W over several GPUs; `gpu_matmul`
    (`"f32"`, `"tf32"` or `"f16"`) is the arithmetic of W·X where a GPU steps many series
    together (the tensor cores for the last two; `"f16"` needs `activation="tanh"`).
    """

    def __init__(
        self,
        size=1000,
        spectral_radius=0.95,
        leak_rate=0.3,
        input_scaling=1.0,
        connection_prob=0.1,
        input_connectivity=0.1,
        bias_scaling=0.0,
        noise_level=0.0,
        activation="tanh",
        weight_distribution="uniform",
        precision="f32",
        seed=42,
        ridge=1e-6,
        washout=100,
        device="auto",
        devices=None,
        gpu_matmul="f32",
    ):
        self.size = size
        self.spectral_radius = spectral_radius
        self.leak_rate = leak_rate
        self.input_scaling = input_scaling
        self.connection_prob = connection_prob
        self.input_connectivity = input_connectivity
        self.bias_scaling = bias_scaling
        self.noise_level = noise_level
        self.activation = activation
        self.weight_distribution = weight_distribution
        self.precision = precision
        self.seed = seed
        self.ridge = ridge
        self.washout = washout
        self.device = device
        self.devices = devices
        self.gpu_matmul = gpu_matmul

    def _readout_extra(self, get):
        return {"washout": get("washout")}

    def fit(self, X, y):
        """Runs every series and fits the readout on the rows after each one's washout."""
        inputs = sequences(X)
        rows, flat = targets(y, inputs)
        k, m = inputs.width, rows[0].shape[1]
        model, placed = _engine.fit_series(
            self._tables(),
            inputs.arrays,
            rows,
            [f"x{i}" for i in range(k)],
            [f"y{i}" for i in range(m)],
        )
        self.model_, self.device_ = model, placed
        self.n_features_in_, self.n_outputs_, self._flat = k, m, flat
        return self

    def predict(self, X):
        """The prediction for every step of every series, in the layout of X."""
        self._check_fitted()
        inputs = self._inputs(X)
        outputs, self.device_ = self.model_.predict(inputs.arrays, self.device)
        if self._flat:
            outputs = [o[:, 0] for o in outputs]
        return inputs.like(outputs)

    def score(self, X, y, sample_weight=None):
        """R² over the rows after each series' washout, averaged over the targets."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported")
        inputs = self._inputs(X)
        rows, _ = targets(y, inputs)
        predicted = self.predict(X)
        predicted = (
            predicted
            if inputs.layout == "list"
            else list([predicted] if inputs.layout == "series" else predicted)
        )
        w = self.washout
        truth = np.concatenate([r[w:] for r in rows])
        guess = np.concatenate([np.reshape(p, (len(p), -1))[w:] for p in predicted])
        if truth.shape[0] == 0:
            raise ValueError(f"no rows to score after the washout of {w} steps")
        residual = ((truth - guess) ** 2).sum(axis=0)
        total = ((truth - truth.mean(axis=0)) ** 2).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = np.where(total > 0, 1.0 - residual / total, 0.0)
        return float(np.mean(r2))


class ESNClassifier(ClassifierMixin, _EchoStateEstimator):
    """An echo-state network classifying whole sequences with a one-hot ridge readout.

    X is a batch (B x T x K) or a list of sequences (T_i x K); y one label per sequence (any
    labels NumPy can sort). Each sequence runs from the zero state; `features` says what the
    readout sees of its states: `"last"`, `"mean"`, `"mean_last"` (the mean of the last
    `last_k`), or a list of them, averages leaving out the first `warmup` steps. `devices`
    (`"all"` or a list of GPU indices) spreads the sequences over several GPUs, their ridge
    sums added through NCCL; `gpu_matmul` (`"f32"`, `"tf32"` or `"f16"`) is the arithmetic of
    W·X where a GPU steps many sequences together (the tensor cores for the last two; `"f16"`
    needs `activation="tanh"`).
    """

    def __init__(
        self,
        size=1000,
        spectral_radius=0.95,
        leak_rate=0.3,
        input_scaling=1.0,
        connection_prob=0.1,
        input_connectivity=0.1,
        bias_scaling=0.0,
        noise_level=0.0,
        activation="tanh",
        weight_distribution="uniform",
        precision="f32",
        seed=42,
        ridge=1e-6,
        features="last",
        last_k=5,
        warmup=0,
        device="auto",
        devices=None,
        gpu_matmul="f32",
    ):
        self.size = size
        self.spectral_radius = spectral_radius
        self.leak_rate = leak_rate
        self.input_scaling = input_scaling
        self.connection_prob = connection_prob
        self.input_connectivity = input_connectivity
        self.bias_scaling = bias_scaling
        self.noise_level = noise_level
        self.activation = activation
        self.weight_distribution = weight_distribution
        self.precision = precision
        self.seed = seed
        self.ridge = ridge
        self.features = features
        self.last_k = last_k
        self.warmup = warmup
        self.device = device
        self.devices = devices
        self.gpu_matmul = gpu_matmul

    def _extra_tables(self, get):
        summaries = [self.features] if isinstance(self.features, str) else list(self.features)
        for s in summaries:
            if not isinstance(s, str):
                raise TypeError(f"features: expected strings, got {type(s).__name__}")
        return {
            "features": {
                "summaries": summaries,
                "last_k": get("last_k"),
                "warmup": get("warmup"),
            }
        }

    def fit(self, X, y):
        """Runs every sequence and fits the one-hot readout on their features."""
        inputs = sequences(X)
        if inputs.layout == "series":
            raise ValueError(
                "X: a classifier needs many sequences: a 3-D array (sequences x steps x "
                "channels) or a list of 2-D arrays, got one 2-D array"
            )
        labels = np.asarray(y)
        if labels.ndim != 1 or labels.shape[0] != len(inputs.arrays):
            raise ValueError(
                f"y: expected one label per sequence ({len(inputs.arrays)}), "
                f"got shape {labels.shape}"
            )
        classes = np.unique(labels)
        names = [str(c) for c in classes]
        if len(set(names)) != len(names):
            raise ValueError("y: two different labels print the same; use distinct labels")
        model, placed = _engine.fit_classifier(
            self._tables(),
            inputs.arrays,
            [str(c) for c in labels],
            [f"x{i}" for i in range(inputs.width)],
        )
        self._adopt(model, classes)
        self.device_ = placed
        return self

    def _adopt(self, model, classes):
        """Keeps `model`, whose outputs are in its own class order, for `classes`."""
        order = {name: i for i, name in enumerate(model.classes)}
        self._columns = np.array([order[str(c)] for c in classes])
        self.model_, self.classes_ = model, classes
        self.n_features_in_ = len(model.input_columns)

    def decision_function(self, X):
        """The readout's output for every sequence and class (columns in `classes_` order)."""
        self._check_fitted()
        inputs = self._inputs(X)
        outputs, self.device_ = self.model_.decision_function(inputs.arrays, self.device)
        return outputs[:, self._columns]

    def predict(self, X):
        """The class of every sequence: the largest output's."""
        scores = self.decision_function(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported")
        return float(np.mean(self.predict(X) == np.asarray(y)))
