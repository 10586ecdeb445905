"""reservoir: echo-state and spiking reservoir computing on the CPU and NVIDIA GPUs.

The estimators `ESNRegressor` and `ESNClassifier` (and `SequenceScaler`, which standardises
sequences in a `Pipeline`) follow scikit-learn's conventions; the
lower-level objects (`EchoStateNetwork`, `LifReservoir`, `NVAR`, `PatternDetector`,
`Readout`, `Rls`), the spike encoders (`reservoir.spikes`), NIR export and import
(`reservoir.nir`) and the task generators (`reservoir.tasks`) work on NumPy arrays. Models
saved here and by the `reservoir` command line are the same files (`save`, `load`), and
`read_sequences` reads sequence data files as `reservoir fit` does. Every engine call
releases the GIL.
"""

from __future__ import annotations

from . import nir, spikes, tasks
from ._engine import GpuError, Readout, Rls
from ._estimators import ESNClassifier, ESNRegressor
from ._files import SequenceData, load, read_sequences, save
from ._reservoirs import NVAR, EchoStateNetwork
from ._scaler import SequenceScaler
from ._sweep import sweep
from .spikes import LifReservoir, PatternDetector

__all__ = [
    "ESNClassifier",
    "ESNRegressor",
    "EchoStateNetwork",
    "GpuError",
    "LifReservoir",
    "NVAR",
    "PatternDetector",
    "Readout",
    "Rls",
    "SequenceData",
    "SequenceScaler",
    "load",
    "nir",
    "read_sequences",
    "save",
    "spikes",
    "sweep",
    "tasks",
]
