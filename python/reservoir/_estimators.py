"""Echo-state estimators with scikit-learn conventions.

Every sequence runs from the zero state in `fit`, and in `predict` unless it is asked to
continue from the fitted state, so a prediction depends only on its inputs: the estimators
can be cloned, pickled, cross-validated and searched like any scikit-learn estimator. `fit`
validates the parameters (the constructor only stores them), with the messages of the
command line.
"""

from __future__ import annotations

import numpy as np

from . import _engine
from ._base import BaseEstimator, ClassifierMixin, RegressorMixin
from ._data import Sequences, finite, sequences, targets

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

_INTEGERS = ("size", "washout", "seed", "last_k", "warmup", "components")
_FLOATS = (
    "spectral_radius",
    "leak_rate",
    "input_scaling",
    "connection_prob",
    "input_connectivity",
    "bias_scaling",
    "noise_level",
    "ridge",
    "model_ridge",
    "feedback",
)
_STRINGS = ("activation", "weight_distribution", "precision", "device", "gpu_matmul", "kind")
_BOOLEANS = ("bidirectional", "input_to_readout", "input_to_all", "increments")


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
    if name in _BOOLEANS:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name}: expected True or False, got {type(value).__name__}")
        return bool(value)
    return value


def _is_many(X):
    """Whether `X` holds many sequences: a 3-D array, or a list of 2-D arrays."""
    if isinstance(X, (list, tuple)):
        return len(X) == 0 or any(np.ndim(x) == 2 for x in X)
    return np.asarray(X).ndim == 3


class _EchoStateEstimator(BaseEstimator):
    """What both estimators share: the parameters as config tables, the input checks,
    pickling through the model file's bytes."""

    def _tables(self):
        get = lambda name: _checked_type(name, getattr(self, name))  # noqa: E731
        return {
            "device": get("device"),
            "devices": self.devices,
            "gpu_matmul": get("gpu_matmul"),
            "reservoir": {key: get(key) for key in _RESERVOIR_KEYS},
            "model": {
                "reservoir": get("kind"),
                "input_to_readout": get("input_to_readout"),
                "layers": self.layers,
                "input_to_all": get("input_to_all"),
                "readout_layers": self.readout_layers,
                "nvar": self.nvar,
                "plasticity": self.plasticity,
                **self._model_extra(get),
            },
            "readout": {"ridge": get("ridge"), **self._readout_extra(get)},
            **self._extra_tables(get),
        }

    def _readout_extra(self, get):
        return {}

    def _model_extra(self, get):
        return {}

    def _extra_tables(self, get):
        return {}

    def _table(self, X, reset):
        """A 2-D input (rows x channels) checked as scikit-learn checks one, its width and
        column names recorded by a `fit` (`reset`) and compared by the other methods."""
        try:
            from sklearn.utils.validation import validate_data
        except ImportError:  # scikit-learn is optional
            return self._width(finite(sequences(X).arrays[0], "X"), reset)
        return validate_data(self, X, reset=reset, dtype=np.float64)

    def _width(self, array, reset):
        """Records (`reset`) or checks the channel count of `array` (a sequence, T x K)."""
        width = array.shape[1]
        if width == 0:
            raise ValueError(
                f"X has 0 feature(s) (shape={array.shape}) while a minimum of 1 is required."
            )
        if reset:
            self.n_features_in_ = width
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        elif width != self.n_features_in_:
            raise ValueError(
                f"X has {width} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return array

    def _many(self, X, reset):
        """Many sequences (a 3-D array or a list of 2-D arrays), checked."""
        inputs = sequences(X)
        # A batch is checked whole; the first sequence with a bad value is then named.
        whole_fine = inputs.batch is not None and np.isfinite(inputs.batch).all()
        for i, x in enumerate([] if whole_fine else inputs.arrays):
            finite(x, f"X[{i}]")
        self._width(inputs.arrays[0], reset)
        return inputs

    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise _not_fitted(self)

    def __getstate__(self):
        """The estimator's attributes, its model as the bytes of its model file."""
        parent = getattr(super(), "__getstate__", None)
        state = dict(parent() if parent is not None else self.__dict__)
        if "model_" in state:
            state["model_"] = bytes(state["model_"].to_bytes())
        return state

    def __setstate__(self, state):
        state = dict(state)
        if isinstance(state.get("model_"), bytes):
            state["model_"] = _engine.model_from_bytes(state["model_"])
        parent = getattr(super(), "__setstate__", None)
        if parent is not None:
            parent(state)
        else:
            self.__dict__.update(state)


def _not_fitted(estimator):
    message = f"This {type(estimator).__name__} instance is not fitted yet; call 'fit' first."
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return AttributeError(message)
    return NotFittedError(message)


def _r2(truth, guess):
    """R² per target averaged over the targets: scikit-learn's `r2_score` (a constant target
    scores 1.0 when predicted exactly, else 0.0)."""
    residual = ((truth - guess) ** 2).sum(axis=0)
    total = ((truth - truth.mean(axis=0)) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(total > 0, 1.0 - residual / total, np.where(residual == 0, 1.0, 0.0))
    return float(np.mean(r2))


class ESNRegressor(RegressorMixin, _EchoStateEstimator):
    """An echo-state network with a ridge readout, predicting a value per time step.

    X is one series (T x K), a batch (B x T x K) or a list of series (T_i x K); y has the
    same layout with one target row per step (1-D per series for one target). Each series
    runs from the zero state; its first `washout` steps settle the reservoir and are left
    out of the fit. The fitted model keeps the last series' end state: `predict(X,
    continue_state=True)` runs a series that continues it without a new transient, and
    `generate` forecasts in closed loop from it. Parameters are those of the `[reservoir]`
    and `[readout]` config tables and the `device` key (`"auto"`, `"cpu"`, `"cuda"`,
    `"cuda:N"`); `devices` (`"all"` or a list of GPU indices) splits a large dense
    reservoir's W over several GPUs; `gpu_matmul` (`"f32"`, `"tf32"` or `"f16"`) is the
    arithmetic of W·X where a GPU steps many series together (the tensor cores for the last
    two; `"f16"` needs `activation="tanh"`). The model's other parts are the `[model]` table's:
    `kind` (`"echo_state"`, `"deep_echo_state"` with `layers`, a list of dicts of layer
    settings, `input_to_all` and `readout_layers`, or `"nvar"` with `nvar`, a dict of
    `delay`, `order` and `strides`), `input_to_readout` (the input beside the states in the
    readout's features), `plasticity` (a dict of intrinsic-plasticity settings), `feedback`
    (the scaling of the outputs fed back into the reservoir: the true previous targets while
    fitting, the model's own outputs when predicting; `None` for none) and `increments` (the
    readout learns each target minus the step's input, which needs one target per input).
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
        kind="echo_state",
        layers=None,
        input_to_all=False,
        readout_layers=None,
        nvar=None,
        input_to_readout=False,
        plasticity=None,
        feedback=None,
        increments=False,
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
        self.kind = kind
        self.layers = layers
        self.input_to_all = input_to_all
        self.readout_layers = readout_layers
        self.nvar = nvar
        self.input_to_readout = input_to_readout
        self.plasticity = plasticity
        self.feedback = feedback
        self.increments = increments
        self.device = device
        self.devices = devices
        self.gpu_matmul = gpu_matmul

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _readout_extra(self, get):
        return {"washout": get("washout")}

    def _model_extra(self, get):
        feedback = None if self.feedback is None else get("feedback")
        return {"feedback": feedback, "increments": get("increments")}

    def _inputs(self, X, reset):
        if _is_many(X):
            return self._many(X, reset)
        return Sequences([self._table(X, reset)], "series")

    def fit(self, X, y):
        """Runs every series and fits the readout on the rows after each one's washout."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        inputs = self._inputs(X, reset=True)
        rows, flat = targets(y, inputs)
        k, m = inputs.width, rows[0].shape[1]
        model, placed = _engine.fit_series(
            self._tables(),
            inputs.engine,
            rows,
            [f"x{i}" for i in range(k)],
            [f"y{i}" for i in range(m)],
        )
        self.model_, self.device_ = model, placed
        self.n_outputs_, self._flat = m, flat
        return self

    def predict(self, X, continue_state=False):
        """The prediction for every step of every series, in the layout of X. Each series
        runs from the zero state, or with `continue_state` (one series, T x K) from the end
        of the last training series (or of the fit that wrote a loaded model file)."""
        self._check_fitted()
        inputs = self._inputs(X, reset=False)
        outputs, _ = self.model_.predict(inputs.engine, self.device, continue_state)
        if self._flat:
            outputs = [o[:, 0] for o in outputs]
        return inputs.like(outputs)

    def generate(self, n_steps, X=None):
        """The `n_steps` values that follow the training series in closed loop, each fed
        back as the next input; with X (rows that continue the series, T x K), the reservoir
        runs through them first and the values follow X's last row. The model must predict
        its own input one step ahead (as many targets as input channels)."""
        self._check_fitted()
        if self.n_outputs_ != self.n_features_in_:
            raise ValueError(
                f"generate: the model predicts {self.n_outputs_} target(s) from "
                f"{self.n_features_in_} input channel(s); closed-loop generation feeds the "
                "prediction back as the input, so they must be the same"
            )
        if isinstance(n_steps, (bool, np.bool_)) or not isinstance(n_steps, (int, np.integer)):
            raise TypeError(f"n_steps: expected an integer, got {type(n_steps).__name__}")
        if n_steps < 0:
            raise ValueError(f"n_steps: expected a count of steps, got {n_steps}")
        context = None if X is None else self._inputs(X, reset=False)
        if context is not None and context.layout != "series":
            raise ValueError("X: generate continues one series (steps x channels)")
        values, _ = self.model_.generate(
            int(n_steps), None if context is None else context.arrays[0], self.device
        )
        return values[:, 0] if self._flat else values

    def score(self, X, y, sample_weight=None, continue_state=False):
        """R² (scikit-learn's `r2_score`, averaged over the targets) of `predict(X,
        continue_state)` on the rows after each series' washout: the rows `fit` fits."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported")
        inputs = self._inputs(X, reset=False)
        rows, _ = targets(y, inputs)
        predicted = self.predict(X, continue_state)
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
        return _r2(truth, guess)


def _labels(y, n):
    """`y` as one label per sequence (n), checked to be classes, not continuous values."""
    if y is None:
        raise ValueError("ESNClassifier requires y to be passed, but the target y is None")
    try:
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import column_or_1d
    except ImportError:  # scikit-learn is optional
        labels = np.asarray(y)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.dtype.kind == "f" and not np.all(
            np.isfinite(labels) & (labels == labels.round())
        ):
            raise ValueError("Unknown label type: continuous. y must hold classes") from None
    else:
        labels = column_or_1d(y, warn=True)
        check_classification_targets(labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"y: expected one label per sequence ({n}), got shape {labels.shape}")
    return labels


def _labels_from_names(names, dtype):
    """Class names (text) in the labels' NumPy dtype (`dtype.str`); text without one."""
    if dtype is None:
        return np.array(names)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([name == "True" for name in names])
    if dtype.kind in "iuf":
        return np.array(names).astype(dtype)
    if dtype.kind == "U":
        return np.array(names, dtype=dtype)
    return np.array(names, dtype=object)


class ESNClassifier(ClassifierMixin, _EchoStateEstimator):
    """An echo-state network classifying whole sequences with a one-hot ridge readout.

    X is a batch (B x T x K), a list of sequences (T_i x K), or a 2-D array whose rows are
    sequences of one step (B x K, a table as any scikit-learn classifier takes); y one label
    per sequence (any labels NumPy can sort, not continuous values), whose dtype `predict`
    keeps. Each sequence runs from the zero state; `features` says what the readout sees of
    its states: `"last"`, `"mean"`, `"mean_last"` (the mean of the last `last_k`),
    `"model_space"` (the weights and biases of a ridge model, of strength `model_ridge`, that
    predicts each state from the one before), or a list of them, all but `"last"` leaving out
    the first `warmup` steps. `bidirectional=True` puts the time-reversed sequence's states
    beside the forward ones; `components` > 0 projects the states onto that many principal
    components, fitted on the training sequences, before they are summarized (as Bianchi et
    al. 2020 do before the model space). `decision_function` is the
    readout's output, `predict_proba` its softmax (scores, not calibrated probabilities).
    `devices` (`"all"` or a list of GPU indices) spreads the sequences over several GPUs,
    their ridge sums added through NCCL; `gpu_matmul` (`"f32"`, `"tf32"` or `"f16"`) is the
    arithmetic of W·X where a GPU steps many sequences together (the tensor cores for the
    last two; `"f16"` needs `activation="tanh"`). `kind`, `layers`, `input_to_all`,
    `readout_layers`, `nvar`, `input_to_readout` and `plasticity` describe the model as for
    `ESNRegressor`.
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
        bidirectional=False,
        components=0,
        model_ridge=1.0,
        kind="echo_state",
        layers=None,
        input_to_all=False,
        readout_layers=None,
        nvar=None,
        input_to_readout=False,
        plasticity=None,
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
        self.bidirectional = bidirectional
        self.components = components
        self.model_ridge = model_ridge
        self.kind = kind
        self.layers = layers
        self.input_to_all = input_to_all
        self.readout_layers = readout_layers
        self.nvar = nvar
        self.input_to_readout = input_to_readout
        self.plasticity = plasticity
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
                "bidirectional": get("bidirectional"),
                "components": get("components"),
                "model_ridge": get("model_ridge"),
            }
        }

    def _inputs(self, X, reset):
        if _is_many(X):
            return self._many(X, reset)
        table = self._table(X, reset)
        return Sequences(list(table[:, None, :]), "batch")

    def fit(self, X, y):
        """Runs every sequence and fits the one-hot readout on their features."""
        inputs = self._inputs(X, reset=True)
        labels = _labels(y, len(inputs.arrays))
        classes = np.unique(labels)
        names = [str(c) for c in classes]
        if len(set(names)) != len(names):
            raise ValueError("y: two different labels print the same; use distinct labels")
        if len(classes) < 2:
            raise ValueError(
                f"y: every sequence has the label {names[0]!r} (one class); a classifier "
                "needs at least two"
            )
        model, placed = _engine.fit_classifier(
            self._tables(),
            inputs.engine,
            [str(c) for c in labels],
            [f"x{i}" for i in range(inputs.width)],
            labels.dtype.str,
        )
        self._adopt(model, classes)
        self.device_ = placed
        return self

    def _adopt(self, model, classes):
        """Keeps `model`, whose outputs are in its own class order, for `classes`."""
        order = {name: i for i, name in enumerate(model.classes)}
        self._columns = np.array([order[str(c)] for c in classes])
        self.model_, self.classes_ = model, classes

    def _scores(self, X):
        """The readout's output for every sequence and class (columns in `classes_` order)."""
        self._check_fitted()
        inputs = self._inputs(X, reset=False)
        outputs, _ = self.model_.decision_function(inputs.engine, self.device)
        return outputs[:, self._columns]

    def decision_function(self, X):
        """The readout's output for every sequence and class (columns in `classes_` order);
        with two classes, the second's output less the first's (positive: the second)."""
        scores = self._scores(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict_log_proba(self, X):
        """The log of `predict_proba`."""
        scores = self._scores(X)
        shifted = scores - scores.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def predict_proba(self, X):
        """The softmax of the readout's outputs (columns in `classes_` order): scores that sum
        to one and rank the classes as `predict` does, not calibrated probabilities (wrap the
        estimator in scikit-learn's `CalibratedClassifierCV` for those)."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X):
        """The class of every sequence: the largest output's."""
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy (weighted by `sample_weight` when given)."""
        return float(np.average(self.predict(X) == np.asarray(y), weights=sample_weight))
