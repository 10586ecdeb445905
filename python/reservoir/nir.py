"""NIR (Neuromorphic Intermediate Representation) export and import of the LIF reservoir, so
that a reservoir built here runs on the simulators and chips that read NIR, and a NIR network
of current-based LIF neurons runs here.

The mapping (NIR 1.0, the `nir` package; times in seconds, as NIR tools use them):

* ``input``: `Input` of shape (K,); ``input_weights``: `Linear` W_in (N x K);
* ``lif``: `CubaLIF` of N neurons with tau_syn = tau_syn_ms / 1000, tau_mem = tau_m_ms / 1000,
  r = resistance, v_leak = v_rest + resistance * bias_current (the constant bias current
  folded into the leak, the same dynamics), v_threshold = threshold, v_reset = v_reset, and
  w_in = tau_syn: NIR's tau_syn dI/dt = -I + w_in S makes a spike through weight w change I by
  w_in * w / tau_syn, so with w_in = tau_syn a spike adds exactly w, as here (and as tools do
  that treat a weight as the jump it causes);
* ``recurrent_weights``: `Linear` W (N x N), with the edges lif -> recurrent_weights -> lif;
* ``output``: `Output` of the N neurons' spikes, or, with a readout, ``trace`` (`LI` with
  tau = r = trace_tau_ms / 1000, v_leak = 0: the spike trace r <- r * exp(-dt/tau) + s the
  readout was fitted on) -> ``readout`` (`Affine`: the readout's weights transposed and its
  intercept) -> `Output` (M).

What NIR cannot express, and what export does then:

* input that is a current (`input_mode="current"`, added to the membrane for one step without
  passing the synapse): ValueError; export a reservoir with `input_mode="synaptic"`, the mode
  for spike inputs;
* the refractory period: NIR's CubaLIF has none, so other tools run the neurons without it
  (a warning says so); the time step `dt_ms`, the features and the other `[lif]` values are
  kept in the graph's metadata (``metadata["reservoir"]``), which `from_nir` reads back, so a
  round trip here gives the same features bit for bit;
* a readout on membrane potentials or spike counts (NIR nodes pass spikes on): ValueError;
* echo-state (tanh) networks: no NIR primitive has their units; TypeError;
* Dale's law is no NIR notion: it is only the signs of W's columns, which import checks;
* spike encoders run before the network: `encoder` (a dict of the `[encoder]` config keys,
  e.g. ``{"kind": "rate", "steps": 4}``) is recorded in the metadata only.

The integration differs between tools: here the current is held over each step of `dt_ms`
and integrated exactly, a spike is delivered one step later, and v >= threshold fires (NIR:
v > threshold).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ._reservoirs import EchoStateNetwork
from .spikes import LifReservoir

__all__ = ["from_nir", "readout_from_nir", "to_nir"]

_SECONDS_PER_MS = 1e-3
_ENCODER_KINDS = ("rate", "latency", "delta", "population", "poisson")
_SUPPORTED = ("Input", "Output", "Affine", "Linear", "CubaLIF", "LI")


def _nir():
    """The `nir` package, or an ImportError saying how to install it."""
    try:
        import nir
    except ImportError as error:
        raise ImportError(
            "NIR export and import need the nir package: pip install 'nir>=1.0' "
            "(or pip install 'reservoir[nir]')"
        ) from error
    return nir


def to_nir(lif_reservoir, encoder=None, readout=None):
    """`lif_reservoir` (a `LifReservoir`) as a `nir.NIRGraph`; with `readout` (a `Readout`
    fitted on its trace features, N x M weights) the graph ends in the readout's M outputs,
    else in the neurons' spikes. `encoder` (a dict of encoder options with its ``kind``) is
    recorded in the metadata. Write the graph with `nir.write(path, graph)`.

    Raises TypeError for anything but a `LifReservoir` (an echo-state network's tanh units
    have no NIR form), ValueError for what NIR cannot express (see the module docs).
    """
    nir = _nir()
    if isinstance(lif_reservoir, EchoStateNetwork):
        raise TypeError(
            "to_nir: an EchoStateNetwork's tanh units have no NIR primitive; only a "
            "LifReservoir can be exported"
        )
    if not isinstance(lif_reservoir, LifReservoir):
        raise TypeError(f"to_nir: expected a LifReservoir, got {type(lif_reservoir).__name__}")
    p = lif_reservoir.params
    if p["input_mode"] != "synaptic":
        raise ValueError(
            "to_nir: input_mode='current' adds the input to the membrane without the synapse, "
            "which NIR's CubaLIF cannot express; build the reservoir with "
            "input_mode='synaptic' (the mode for spike inputs)"
        )
    if round(p["refractory_ms"] / p["dt_ms"]) > 0:
        warnings.warn(
            f"to_nir: NIR's CubaLIF has no refractory period: other tools run these neurons "
            f"without the {p['refractory_ms']} ms one (it stays in the graph's metadata for "
            "reservoir.nir.from_nir)",
            stacklevel=2,
        )
    n = lif_reservoir.size
    recurrent = lif_reservoir.recurrent_weights
    full = lambda value: np.full(n, float(value))  # noqa: E731
    tau_syn = full(p["tau_syn_ms"] * _SECONDS_PER_MS)
    nodes = {
        "input": nir.Input(input_type=np.array([lif_reservoir.input_size])),
        "input_weights": nir.Linear(weight=lif_reservoir.input_weights),
        "lif": nir.CubaLIF(
            tau_syn=tau_syn,
            tau_mem=full(p["tau_m_ms"] * _SECONDS_PER_MS),
            r=full(p["resistance"]),
            v_leak=full(p["v_rest"] + p["resistance"] * p["bias_current"]),
            v_threshold=full(p["threshold"]),
            v_reset=full(p["v_reset"]),
            w_in=tau_syn.copy(),
        ),
        "recurrent_weights": nir.Linear(weight=recurrent),
    }
    edges = [
        ("input", "input_weights"),
        ("input_weights", "lif"),
        ("lif", "recurrent_weights"),
        ("recurrent_weights", "lif"),
    ]
    if readout is None:
        nodes["output"] = nir.Output(output_type=np.array([n]))
        edges.append(("lif", "output"))
    else:
        weights, intercept = _readout_arrays(readout, p, n)
        tau_trace = full(p["trace_tau_ms"] * _SECONDS_PER_MS)
        nodes["trace"] = nir.LI(tau=tau_trace, r=tau_trace.copy(), v_leak=np.zeros(n))
        nodes["readout"] = nir.Affine(weight=weights.T.copy(), bias=intercept)
        nodes["output"] = nir.Output(output_type=np.array([weights.shape[1]]))
        edges += [("lif", "trace"), ("trace", "readout"), ("readout", "output")]
    metadata = {"lif": {k: v for k, v in p.items() if v is not None}}
    if encoder is not None:
        metadata["encoder"] = _encoder_metadata(encoder)
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata={"reservoir": metadata})


def _readout_arrays(readout, params, n):
    """A readout's weights (N x M) and intercept (M), checked against the reservoir."""
    if params["features"] != "trace":
        raise ValueError(
            f"to_nir: the readout reads {params['features']} features, which NIR cannot "
            "express (its nodes pass spikes on); fit the readout on features='trace'"
        )
    weights = np.asarray(readout.weights, dtype=np.float64)
    intercept = np.asarray(readout.intercept, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[0] != n or intercept.shape != (weights.shape[1],):
        raise ValueError(
            f"to_nir: the readout maps {weights.shape[0] if weights.ndim == 2 else '?'} "
            f"features, the reservoir has {n} neurons (fit it on the reservoir's features)"
        )
    return weights, intercept


def _encoder_metadata(encoder):
    """`encoder` (a dict with `kind`) as metadata, its values checked."""
    if not isinstance(encoder, dict) or encoder.get("kind") not in _ENCODER_KINDS:
        raise ValueError(
            f"to_nir: encoder must be a dict with 'kind' one of {list(_ENCODER_KINDS)}, "
            f"got {encoder!r}"
        )
    for key, value in encoder.items():
        if value is not None and not isinstance(value, (str, bool, int, float, np.number)):
            raise ValueError(f"to_nir: encoder[{key!r}] must be a number, bool or string")
    return {k: v for k, v in encoder.items() if v is not None}


def _graph(graph):
    """`graph`, reading it first when it is a path."""
    nir = _nir()
    if isinstance(graph, (str, os.PathLike)):
        return nir.read(os.fspath(graph))
    if not isinstance(graph, nir.NIRGraph):
        raise TypeError(f"expected a nir.NIRGraph or a path, got {type(graph).__name__}")
    return graph


class _Parts:
    """The pieces of a supported graph: its input weights, neurons, recurrent weights and
    the nodes after the neurons."""

    def __init__(self, graph):
        names = {name: type(node).__name__ for name, node in graph.nodes.items()}
        for name, kind in names.items():
            if kind not in _SUPPORTED:
                raise ValueError(
                    f"from_nir: node {name!r} is a {kind}, which is not supported; expected "
                    "Input -> Affine/Linear -> CubaLIF (with an optional recurrent "
                    "Affine/Linear) -> Output, optionally through LI -> Affine/Linear"
                )
        self.successors = {name: [] for name in names}
        self.predecessors = {name: [] for name in names}
        for source, target in graph.edges:
            for end in (source, target):
                if end not in names:
                    raise ValueError(f"from_nir: an edge names the missing node {end!r}")
            self.successors[source].append(target)
            self.predecessors[target].append(source)
        self.nodes = graph.nodes
        self.lif = self._only(names, "CubaLIF")
        inputs = [name for name, kind in names.items() if kind == "Input"]
        if len(inputs) != 1:
            raise ValueError(f"from_nir: expected one Input node, found {len(inputs)}")
        after_input = self.successors[inputs[0]]
        if (
            len(after_input) != 1
            or names[after_input[0]] not in ("Affine", "Linear")
            or self.successors[after_input[0]] != [self.lif]
        ):
            raise ValueError(
                "from_nir: the Input must feed one Affine/Linear node that feeds the CubaLIF"
            )
        self.input_weights = after_input[0]
        loops = [
            name
            for name in self.successors[self.lif]
            if names[name] in ("Affine", "Linear") and self.lif in self.successors[name]
        ]
        if len(loops) > 1:
            raise ValueError(f"from_nir: more than one recurrent connection: {loops}")
        self.recurrent = loops[0] if loops else None
        expected = {self.input_weights} | set(loops)
        if set(self.predecessors[self.lif]) != expected:
            extra = sorted(set(self.predecessors[self.lif]) - expected)
            raise ValueError(f"from_nir: the CubaLIF has unsupported inputs from {extra}")
        self.names = names

    def _only(self, names, kind):
        found = [name for name, k in names.items() if k == kind]
        if len(found) != 1:
            raise ValueError(f"from_nir: expected one {kind} node, found {len(found)}")
        return found[0]

    def readout(self):
        """The readout after the neurons, as (weights N x M, intercept M), or None when the
        output is the neurons' spikes."""
        ahead = [s for s in self.successors[self.lif] if s != self.recurrent]
        if [self.names[s] for s in ahead] == ["Output"]:
            return None
        if len(ahead) != 1 or self.names[ahead[0]] != "LI":
            raise ValueError(
                "from_nir: after the CubaLIF expected an Output, or LI -> Affine/Linear -> Output"
            )
        trace = ahead[0]
        after = self.successors[trace]
        if len(after) != 1 or self.names[after[0]] not in ("Affine", "Linear"):
            raise ValueError("from_nir: the LI must feed one Affine/Linear node")
        if [self.names[s] for s in self.successors[after[0]]] != ["Output"]:
            raise ValueError("from_nir: the readout's Affine/Linear must feed an Output")
        node = self.nodes[after[0]]
        weight = np.asarray(node.weight, dtype=np.float64)
        bias = getattr(node, "bias", None)
        bias = np.zeros(weight.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64)
        return weight.T.copy(), np.broadcast_to(bias, (weight.shape[0],)).copy()


def _uniform(node, field):
    """The one value of a per-neuron parameter, or ValueError when neurons differ."""
    values = np.asarray(getattr(node, field), dtype=np.float64).ravel()
    if values.size == 0 or not np.all(values == values[0]):
        raise ValueError(
            f"from_nir: the CubaLIF's {field} differs between neurons; the LIF reservoir has "
            "one value for all"
        )
    return float(values[0])


def _prefer(stored, derived):
    """The metadata's exact value where it agrees with the graph's, else the graph's."""
    if stored is not None and np.isclose(float(stored), derived, rtol=1e-9, atol=0.0):
        return float(stored)
    return derived


def _weight(node, name):
    """A Linear or Affine node's weight as a float64 matrix; its bias (0 for Linear)."""
    weight = np.asarray(node.weight, dtype=np.float64)
    if weight.ndim != 2:
        raise ValueError(f"from_nir: {name}'s weight must be 2-D, got shape {weight.shape}")
    bias = np.asarray(getattr(node, "bias", 0.0), dtype=np.float64)
    return weight, np.broadcast_to(bias, (weight.shape[0],))


def from_nir(graph, device="auto", dt_ms=None, **params):
    """A `LifReservoir` from a NIR graph (a `nir.NIRGraph` or a path to a .nir file) of
    Input -> Affine/Linear -> CubaLIF (optionally with a recurrent Affine/Linear) -> Output,
    optionally with a readout LI -> Affine/Linear before the Output (see
    `readout_from_nir`). Every node type else is a ValueError naming it.

    The neurons must share their parameters (the reservoir has one value each) and each
    column of the recurrent weights one sign (Dale's law). Times are read as seconds. A spike
    through weight w adds w_in * w / tau_syn to the synaptic current, as NIR's equation says;
    the reservoir runs with `input_mode="synaptic"`. The time step is `dt_ms`, else the one
    in the graph's metadata, else the `[lif]` default 0.1 ms; the refractory period, features
    and trace time constant come from the metadata where the graph was written here.
    `params` are further `[lif]` keys (e.g. `features`), and win over the graph.

    A bias of the input Affine is a constant drive of the synapse; it enters as the
    constant current w_in * bias (its steady value) from the first step.
    """
    graph = _graph(graph)
    parts = _Parts(graph)
    lif = parts.nodes[parts.lif]
    stored = dict(graph.metadata.get("reservoir", {}).get("lif", {})) if graph.metadata else {}
    tau_syn = _uniform(lif, "tau_syn")
    w_in = _uniform(lif, "w_in")
    if tau_syn <= 0:
        raise ValueError(f"from_nir: the CubaLIF's tau_syn must be > 0, got {tau_syn}")
    jump = w_in / tau_syn
    r = _uniform(lif, "r")
    v_leak = _uniform(lif, "v_leak")
    input_weights, input_bias = _weight(parts.nodes[parts.input_weights], parts.input_weights)
    if parts.recurrent is None:
        n = input_weights.shape[0]
        recurrent = np.zeros((n, n))
    else:
        recurrent, recurrent_bias = _weight(parts.nodes[parts.recurrent], parts.recurrent)
        if np.any(recurrent_bias != 0):
            raise ValueError(
                "from_nir: the recurrent Affine has a bias, a constant drive the reservoir "
                "does not have on its recurrent synapses; use a Linear"
            )
    if jump != 1.0:
        input_weights = input_weights * jump
        recurrent = recurrent * jump
    drive = np.unique(input_bias * w_in)
    if drive.size != 1:
        raise ValueError(
            "from_nir: the input Affine's bias differs between neurons; the LIF reservoir "
            "has one bias current for all"
        )
    v_rest, bias = v_leak, 0.0
    if "v_rest" in stored and "bias_current" in stored:
        if np.isclose(float(stored["v_rest"]) + r * float(stored["bias_current"]), v_leak):
            v_rest, bias = float(stored["v_rest"]), float(stored["bias_current"])
    lif_params = {
        "tau_syn_ms": _prefer(stored.get("tau_syn_ms"), tau_syn / _SECONDS_PER_MS),
        "tau_m_ms": _prefer(stored.get("tau_m_ms"), _uniform(lif, "tau_mem") / _SECONDS_PER_MS),
        "resistance": r,
        "v_rest": v_rest,
        "bias_current": bias + float(drive[0]),
        "threshold": _uniform(lif, "v_threshold"),
        "v_reset": _uniform(lif, "v_reset"),
        "refractory_ms": float(stored.get("refractory_ms", 0.0)),
        "input_mode": "synaptic",
    }
    for key in ("dt_ms", "trace_tau_ms"):
        if key in stored:
            lif_params[key] = float(stored[key])
    if "features" in stored:
        lif_params["features"] = str(stored["features"])
    if "count_window_steps" in stored:
        lif_params["count_window_steps"] = int(stored["count_window_steps"])
    trace = [s for s in parts.successors[parts.lif] if parts.names[s] == "LI"]
    if trace:
        tau_trace = _uniform(parts.nodes[trace[0]], "tau") / _SECONDS_PER_MS
        lif_params["trace_tau_ms"] = _prefer(stored.get("trace_tau_ms"), tau_trace)
    if dt_ms is not None:
        lif_params["dt_ms"] = dt_ms
    lif_params.update(params)
    return LifReservoir.from_weights(recurrent, input_weights, device=device, **lif_params)


def readout_from_nir(graph):
    """The readout at the end of a NIR graph that `from_nir` reads, as (weights N x M,
    intercept M) to apply to the reservoir's trace features (`features @ weights +
    intercept`), or None when the graph outputs the neurons' spikes."""
    return _Parts(_graph(graph)).readout()
