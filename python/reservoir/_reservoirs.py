"""The echo-state reservoir as an object that keeps its state between runs."""

from __future__ import annotations

import numpy as np

from . import _engine
from ._data import sequences
from ._estimators import _RESERVOIR_KEYS, _checked_type


class EchoStateNetwork:
    """An echo-state reservoir: `run` feeds inputs (T x K) from the current state and
    returns the states (T x N); `state`, `set_state` and `reset` read and set it.

    Parameters are the `[reservoir]` config keys (`size`, `spectral_radius`, `leak_rate`,
    ...), `input_size` (K) and `device`; `steps` is the work `device="auto"` weighs when it
    chooses between the CPU and a GPU.
    """

    def __init__(self, input_size=1, device="auto", steps=0, **params):
        unknown = sorted(set(params) - set(_RESERVOIR_KEYS))
        if unknown:
            raise TypeError(
                f"unknown parameter(s) {unknown}; expected input_size, device, steps or "
                f"one of {list(_RESERVOIR_KEYS)}"
            )
        reservoir = {k: _checked_type(k, v) for k, v in params.items()}
        self._engine = _engine.EchoStateNetwork(
            {"device": _checked_type("device", device), "reservoir": reservoir},
            int(input_size),
            int(steps),
        )

    @property
    def size(self):
        """Units N."""
        return self._engine.size

    @property
    def input_size(self):
        """Input channels K."""
        return self._engine.input_size

    @property
    def device(self):
        """Where it runs: `cpu` or `cuda:N`."""
        return self._engine.device

    def run(self, inputs):
        """States (T x N) after each row of `inputs` (T x K), from the current state."""
        seqs = sequences(inputs, "inputs")
        if seqs.layout != "series":
            raise ValueError(
                "inputs: expected one 2-D array (steps x channels); run_many runs many"
            )
        return self._engine.run(seqs.arrays[0])

    def run_many(self, inputs):
        """The states of every sequence (3-D array or list), each run from the zero state;
        the reservoir's own state is left as it was."""
        seqs = sequences(inputs, "inputs")
        return seqs.like(self._engine.run_many(seqs.engine))

    def state(self):
        """The current state (N)."""
        return self._engine.state()

    def set_state(self, state):
        """Sets the state (N finite values)."""
        self._engine.set_state(np.asarray(state, dtype=np.float64))

    def reset(self):
        """Sets the state to zero."""
        self._engine.reset()


def _positive_count(name, value):
    """`value` as an int >= 1, or TypeError/ValueError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"nvar.{name}: must be >= 1 (got {value})")
    return int(value)


class NVAR:
    """The features of next-generation reservoir computing (Gauthier et al. 2021), with
    ReservoirPy's `NVAR` names and feature order: for each step of `run`'s inputs (T x K),
    the input and `delay - 1` earlier ones taken every `strides` steps (`delay * K` values;
    inputs before the first are zero), then every unique monomial of degree `order` of them.
    It keeps the inputs it has seen, so a series given in parts gives the features of the
    whole; `reset` forgets them. A ridge readout on the features (`Readout.ridge`, whose
    intercept is the constant term) makes the forecaster.
    """

    def __init__(self, delay, order, strides=1, input_size=1):
        self._engine = _engine.Nvar(
            _positive_count("delay", delay),
            _positive_count("order", order),
            _positive_count("strides", strides),
            _positive_count("input_size", input_size),
        )

    @property
    def width(self):
        """Features a step: `linear_width` and the monomials."""
        return self._engine.width

    @property
    def linear_width(self):
        """Values of the linear part: `delay * input_size`."""
        return self._engine.linear_width

    def run(self, inputs):
        """The features (T x width) after each row of `inputs` (T x K), continuing from the
        inputs seen before."""
        seqs = sequences(inputs, "inputs")
        if seqs.layout != "series":
            raise ValueError("inputs: expected one 2-D array (steps x channels)")
        return self._engine.run(seqs.arrays[0])

    def reset(self):
        """Forgets the inputs seen: the past is zero again."""
        self._engine.reset()
