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
        return seqs.like(self._engine.run_many(seqs.arrays))

    def state(self):
        """The current state (N)."""
        return self._engine.state()

    def set_state(self, state):
        """Sets the state (N finite values)."""
        self._engine.set_state(np.asarray(state, dtype=np.float64))

    def reset(self):
        """Sets the state to zero."""
        self._engine.reset()
