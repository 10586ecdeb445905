"""The spiking side: spike encoders, the LIF reservoir and the spike-template detector.

Spike trains are NumPy arrays of steps x channels (float64: 1 for a spike, 0 otherwise, -1
for an off-spike of the delta code, a count for the Poisson code), one row per time step, as
`LifReservoir.run` takes them. The random encoders are seeded: the same seed gives the same
spikes on every machine.
"""

from __future__ import annotations

import numpy as np

from . import _engine
from ._data import _float64, sequences
from ._estimators import _checked_type
from ._reservoirs import EchoStateNetwork

__all__ = [
    "LifReservoir",
    "PatternDetector",
    "encode_delta",
    "encode_latency",
    "encode_poisson",
    "encode_population",
    "encode_rate",
    "plant_patterns",
    "random_template",
]

_LIF_INTEGERS = ("size", "count_window_steps", "seed")
_LIF_FLOATS = (
    "dt_ms",
    "tau_m_ms",
    "tau_syn_ms",
    "threshold",
    "v_rest",
    "v_reset",
    "refractory_ms",
    "resistance",
    "excitatory_fraction",
    "connection_prob",
    "spectral_radius",
    "input_scaling",
    "input_connectivity",
    "bias_current",
    "trace_tau_ms",
)
_LIF_STRINGS = ("input_mode", "integration", "features")
_LIF_KEYS = _LIF_INTEGERS + _LIF_FLOATS + _LIF_STRINGS


def _count(name, value):
    """`value` as a non-negative int, or TypeError/ValueError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name}: must be >= 0, got {value}")
    return int(value)


def _number(name, value):
    """`value` as a float, or TypeError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    return float(value)


def _flag(name, value):
    """`value` as a bool, or TypeError naming `name`."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__}")
    return bool(value)


def _rows(x, name="x"):
    """`x` as float64 rows x features: a 1-D array is one row (a static input)."""
    array = _float64(x, name)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(
            f"{name}: expected a 1-D array (features) or a 2-D array (rows x features), "
            f"got shape {array.shape}"
        )
    return array


def _trains(x, name):
    """A spike-train matrix (steps x channels) as float64."""
    array = _float64(x, name)
    if array.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array (steps x channels), got shape {array.shape}"
        )
    return array


def encode_rate(x, steps=1, gain=1.0, offset=0.0, seed=0):
    """Rate (Bernoulli) code, as snnTorch's `spikegen.rate`: each row of `x` (rows x
    features, or one row as a 1-D array) is held for `steps` steps, and a feature spikes in
    each with probability clamp(x * gain + offset, 0, 1). Returns (rows * steps) x features."""
    return _engine.encode_rate(
        _rows(x),
        _count("steps", steps),
        _number("gain", gain),
        _number("offset", offset),
        _count("seed", seed),
    )


def encode_latency(x, steps=1, threshold=0.01, tau=1.0, linear=False, normalize=False, clip=False):
    """Latency (time-to-first-spike) code, as snnTorch's `spikegen.latency`: each row of `x`
    gives one spike per feature within its `steps` steps, strong inputs first (RC code with
    time constant `tau`, or `linear`; `normalize` stretches the times to fill the steps; `clip`
    drops features below `threshold`). Returns (rows * steps) x features. Deterministic."""
    return _engine.encode_latency(
        _rows(x),
        _count("steps", steps),
        _number("threshold", threshold),
        _number("tau", tau),
        _flag("linear", linear),
        _flag("normalize", normalize),
        _flag("clip", clip),
    )


def encode_delta(x, threshold=0.1, padding=False, off_spike=False):
    """Delta modulation of a sequence `x` (steps x features), as snnTorch's `spikegen.delta`:
    1 where a feature rose by at least `threshold` since the previous step (the first step is
    compared with 0, or with itself with `padding`), -1 where it fell that much if
    `off_spike`. Returns steps x features. Deterministic."""
    return _engine.encode_delta(
        _rows(x),
        _number("threshold", threshold),
        _flag("padding", padding),
        _flag("off_spike", off_spike),
    )


def encode_population(
    x,
    neurons_per_feature=10,
    min=0.0,
    max=1.0,
    sigma=None,
    steps=1,
    max_probability=1.0,
    seed=0,
):
    """Population code with Gaussian receptive fields (after Norse): each feature becomes
    `neurons_per_feature` channels with centres evenly from `min` to `max` (width `sigma`,
    by default their spacing), each spiking per step with probability
    max_probability * activation. Each row is held for `steps` steps. Returns
    (rows * steps) x (features * neurons_per_feature), the channels of feature i at
    i * neurons_per_feature ...; the nearest centre spikes most."""
    return _engine.encode_population(
        _rows(x),
        _count("neurons_per_feature", neurons_per_feature),
        _number("min", min),
        _number("max", max),
        None if sigma is None else _number("sigma", sigma),
        _count("steps", steps),
        _number("max_probability", max_probability),
        _count("seed", seed),
    )


def encode_poisson(x, max_rate_hz=100.0, dt_ms=1.0, steps=1, seed=0):
    """Poisson code: each row of `x` (intensities >= 0) is a spike rate of
    x * max_rate_hz over `steps` bins of `dt_ms`; each bin holds its spike count, so a
    value can exceed 1. Returns (rows * steps) x features."""
    return _engine.encode_poisson(
        _rows(x),
        _number("max_rate_hz", max_rate_hz),
        _number("dt_ms", dt_ms),
        _count("steps", steps),
        _count("seed", seed),
    )


def random_template(n_channels, duration_ms, spikes, seed=0, dt_ms=1.0):
    """A seeded random spike template: `spikes` spikes on `n_channels` channels at uniform
    times within `duration_ms`, binned at `dt_ms`: ceil(duration_ms / dt_ms) x n_channels."""
    return _engine.random_template(
        _count("n_channels", n_channels),
        _number("duration_ms", duration_ms),
        _count("spikes", spikes),
        _count("seed", seed),
        _number("dt_ms", dt_ms),
    )


def plant_patterns(
    templates,
    n_channels,
    duration_ms,
    background_hz=10.0,
    occurrences=1,
    jitter_ms=0.0,
    seed=0,
    dt_ms=1.0,
):
    """A seeded test stream: Poisson background spikes at `background_hz` on `n_channels`
    channels over `duration_ms`, with `occurrences` non-overlapping copies of every template
    (spike trains binned at `dt_ms`) planted at random onsets, each spike moved by up to
    `jitter_ms`. Returns the stream binned at `dt_ms`, the onsets (ms) and the template index
    of every copy, by onset."""
    return _engine.plant_patterns(
        _templates(templates),
        _count("n_channels", n_channels),
        _number("duration_ms", duration_ms),
        _number("background_hz", background_hz),
        _count("occurrences", occurrences),
        _number("jitter_ms", jitter_ms),
        _count("seed", seed),
        _number("dt_ms", dt_ms),
    )


def _templates(templates):
    """Templates given as one 2-D array, a 3-D array or a list of 2-D arrays."""
    if isinstance(templates, np.ndarray) and templates.ndim == 2:
        templates = [templates]
    return [_trains(t, f"templates[{i}]") for i, t in enumerate(templates)]


class PatternDetector:
    """Finds fixed spike templates in spike streams: both are filtered per channel with an
    exponential of `tau_ms`, and a template matches where its Pearson correlation with the
    stream's last window of its length reaches `threshold` (a local maximum, at most one per
    `min_separation_ms`, by default the template's length).

    Templates and streams are spike-train matrices (steps x channels) binned at `dt_ms`. The
    options are the `[detector]` config keys, with the command line's messages.
    """

    def __init__(self, templates, dt_ms=1.0, tau_ms=5.0, threshold=0.4, min_separation_ms=None):
        options = {
            "dt_ms": _number("dt_ms", dt_ms),
            "tau_ms": _number("tau_ms", tau_ms),
            "threshold": _number("threshold", threshold),
            "min_separation_ms": None
            if min_separation_ms is None
            else _number("min_separation_ms", min_separation_ms),
        }
        self._engine = _engine.PatternDetector({"detector": options}, _templates(templates))

    @property
    def n_channels(self):
        """Channels of every template and stream."""
        return self._engine.n_channels

    @property
    def n_templates(self):
        """Number of templates."""
        return self._engine.n_templates

    def scores(self, stream):
        """The score in [0, 1] of every template at every step of `stream` (steps x
        templates); 0 until a template's first complete window."""
        return self._engine.scores(_trains(stream, "stream"))

    def detect(self, stream):
        """The matches in `stream`, by time: a dict of equal-length arrays `time_ms` (end of
        the matched window), `template` (index) and `score`."""
        time_ms, template, score = self._engine.detect(_trains(stream, "stream"))
        return {"time_ms": time_ms, "template": template.astype(np.int64), "score": score}


def _passed(name, doc):
    """A read-only property giving the engine object's `name`."""
    return property(lambda self: getattr(self._engine, name), doc=doc)


def _lif_tables(device, params):
    """The `device` and `[lif]` tables of keyword parameters, types checked."""
    unknown = sorted(set(params) - set(_LIF_KEYS))
    if unknown:
        raise TypeError(
            f"unknown parameter(s) {unknown}; expected input_size, device, steps or "
            f"one of {list(_LIF_KEYS)}"
        )
    lif = {}
    for key, value in params.items():
        if value is None:
            continue
        if key in _LIF_INTEGERS:
            lif[key] = _count(key, value)
        elif key in _LIF_FLOATS:
            lif[key] = _number(key, value)
        elif not isinstance(value, str):
            raise TypeError(f"{key}: expected a string, got {type(value).__name__}")
        else:
            lif[key] = value
    return {"device": _checked_type("device", device), "lif": lif}


class LifReservoir:
    """A current-based leaky integrate-and-fire reservoir: `run` feeds inputs (T x K, one row
    per `dt_ms`: spike trains or currents) from the current state and returns its states
    (T x N), the features it reports: spike traces, membrane potentials or spike counts, as
    `features` says.

    Parameters are the `[lif]` config keys (`size`, `dt_ms`, `tau_m_ms`, `tau_syn_ms`,
    `threshold`, `v_rest`, `v_reset`, `refractory_ms`, `resistance`, `input_mode`,
    `bias_current`, `integration`, `features`, `seed`, ...), with the command line's defaults
    and messages; `input_size` (K), `device`, and `steps`, the work `device="auto"` weighs.
    The drawn weights obey Dale's law. Spike inputs
    want `input_mode="synaptic"` (a spike then charges the synapse as a recurrent one does).
    The weights are drawn from `seed`; `from_weights` takes given ones (NIR import).
    """

    def __init__(self, input_size=1, device="auto", steps=0, **params):
        self._engine = _engine.LifReservoir(
            _lif_tables(device, params), _count("input_size", input_size), _count("steps", steps)
        )

    @classmethod
    def from_weights(cls, recurrent, input, excitatory=None, device="auto", steps=0, **params):
        """A reservoir on given weights: `recurrent` W (N x N, row = target neuron, column =
        source; a spike of j adds W[i, j] to neuron i's synaptic current) and `input` W_in
        (N x K). Any signs are taken; with `excitatory` (N bools) Dale's law is checked: the
        non-zeros of column j must be >= 0 where `excitatory[j]`, else <= 0. `size` and
        `input_size` come from the shapes; the other parameters are the `[lif]` keys."""
        if "size" in params or "input_size" in params:
            raise TypeError("from_weights: size and input_size come from the weight shapes")
        recurrent = _trains(recurrent, "recurrent")
        input = _trains(input, "input")
        if excitatory is not None:
            excitatory = [bool(e) for e in np.asarray(excitatory, dtype=bool).ravel()]
        reservoir = cls.__new__(cls)
        reservoir._engine = _engine.LifReservoir.from_weights(
            _lif_tables(device, params), recurrent, input, excitatory, _count("steps", steps)
        )
        return reservoir

    size = _passed("size", "Neurons N.")
    input_size = EchoStateNetwork.input_size
    device = EchoStateNetwork.device
    params = _passed(
        "params", "Every `[lif]` value it runs with (times in ms), `size` and `input_size` too."
    )
    recurrent_weights = _passed(
        "recurrent_weights", "W, dense (N x N; row = target, column = source); up to 2^27 entries."
    )
    recurrent_csr = _passed(
        "recurrent_csr",
        "W in CSR form: (row pointers, column indices, values), e.g. for "
        "`scipy.sparse.csr_matrix((values, columns, pointers))`.",
    )
    input_weights = _passed("input_weights", "W_in (N x K).")
    excitatory = _passed(
        "excitatory", "Whether each neuron's outgoing weights are all >= 0 (excitatory)."
    )
    run = EchoStateNetwork.run
    state = EchoStateNetwork.state

    def run_many(self, inputs):
        """The features of every sequence (3-D array or list), each run from rest; the
        reservoir is left at rest."""
        seqs = sequences(inputs, "inputs")
        return seqs.like(self._engine.run_many(seqs.engine))

    def reset(self):
        """Back to rest: membranes at v_rest, currents, traces and counts zero."""
        self._engine.reset()
