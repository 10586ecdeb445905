"""NIR (Neuromorphic Intermediate Representation) export and import of the LIF reservoir, so
that a reservoir built here runs in the simulators and chips that read NIR (Norse, snnTorch),
and a NIR network of current-based LIF neurons made there runs here.

The mapping (NIR 1.0, the `nir` package; times in seconds, dt = `dt_ms` / 1000): NIR's
CubaLIF is tau_syn dI/dt = -I + w_in S, tau_mem dv/dt = (v_leak - v) + r I, which the
importers step with forward Euler, S being 1 in a step with a spike:

* ``input``: `Input` of shape (K,); ``input_weights``: `Linear` g W_in (N x K);
* ``lif``: `CubaLIF` of N neurons with tau_syn, tau_mem, w_in = tau_syn / dt (a spike through
  weight w then moves I by w in one step, as here), r = tau_mem / dt (a current I then moves
  v by I in one step) and the weights scaled by g = R dt / tau_mem to keep R; v_leak = v_rest +
  R bias_current (the constant current folded into the leak, which is NIR's equation),
  v_threshold, v_reset; the conventions Norse's and snnTorch's importers implement;
* ``recurrent_weights``: `Linear` g W (N x N), with the edges lif -> recurrent_weights -> lif;
* ``output``: `Output` of the N neurons' spikes, or, with a readout, ``trace`` (`LI` with
  tau = trace_tau_ms / 1000, r = tau / dt, v_leak = 0: the spike trace the readout was
  fitted on) -> ``readout`` (`Affine`: the readout's weights transposed and its intercept)
  -> `Output` (M). Neither Norse 1.1 nor snnTorch 1.0 imports an LI node: apply
  `readout_from_nir` to the traces of their spikes.
* metadata: ``dt`` (seconds, which Norse's `from_nir(graph, dt=...)` must be given;
  snnTorch assumes 1e-4) and ``reservoir`` (every `[lif]` value, which `from_nir` reads back,
  so a round trip here gives the same features bit for bit).

What NIR cannot express, and what export does then:

* the refractory period: NIR's CubaLIF has none, so export refuses a non-zero one unless
  `lossy=True`, and other tools then let a neuron fire again on the step after a spike;
* the integration: NIR's equations are continuous and the importers step them with forward
  Euler; a reservoir built with `integration="euler"` (and no refractory period) fires the
  same spikes there, one with exact integration slightly different ones;
* input that is a current (`input_mode="current"`, added to the membrane for one step without
  passing the synapse): ValueError; export a reservoir with `input_mode="synaptic"`;
* a readout on membrane potentials or spike counts (NIR nodes pass spikes on): ValueError;
* echo-state (tanh) networks: no NIR primitive has their units; TypeError;
* spike encoders run before the network: `encoder` (a dict of the `[encoder]` config keys,
  e.g. ``{"kind": "rate", "steps": 4}``) is recorded in the metadata only.

Where the importers part from NIR: Norse 1.1 also drives the synaptic current toward v_leak
(export with v_rest = 0 and bias_current = 0 for Norse) and leaves a recurrent layer's output
(its bias) out of the first step; snnTorch 1.0 refuses a non-zero v_leak, its importer fires
nothing on this export, and its neurons reset a step late (the step after a spike starts from
zero, its input dropped: a refractory period of one step here). Spikes fire here at
v >= threshold, there at v > threshold.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ._reservoirs import EchoStateNetwork
from .spikes import LifReservoir

__all__ = ["DrivenLifReservoir", "from_nir", "readout_from_nir", "to_nir"]

_SECONDS_PER_MS = 1e-3
_ENCODER_KINDS = ("rate", "latency", "delta", "population", "poisson")
_SUPPORTED = ("Input", "Output", "Affine", "Linear", "CubaLIF", "LIF", "LI")


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


def to_nir(lif_reservoir, encoder=None, readout=None, lossy=False):
    """`lif_reservoir` (a `LifReservoir`) as a `nir.NIRGraph`; with `readout` (a `Readout`
    fitted on its trace features, N x M weights) the graph ends in the readout's M outputs,
    else in the neurons' spikes. `encoder` (a dict of encoder options with its ``kind``) is
    recorded in the metadata. A refractory period is refused unless `lossy` (NIR has none).
    Write the graph with `nir.write(path, graph)`.

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
        message = (
            f"NIR's CubaLIF has no refractory period: other tools run these neurons without "
            f"the {p['refractory_ms']} ms one, so a neuron can fire again on the step after a "
            "spike (it stays in the graph's metadata for reservoir.nir.from_nir)"
        )
        if not lossy:
            raise ValueError(
                f"to_nir: {message}; build the reservoir with refractory_ms=0 to export it "
                "exactly, or pass lossy=True to export it anyway"
            )
        warnings.warn(f"to_nir: {message}", stacklevel=2)
    n = lif_reservoir.size
    dt = p["dt_ms"] * _SECONDS_PER_MS
    tau_mem = p["tau_m_ms"] * _SECONDS_PER_MS
    gain = p["resistance"] * dt / tau_mem
    full = lambda value: np.full(n, float(value))  # noqa: E731
    tau_syn = full(p["tau_syn_ms"] * _SECONDS_PER_MS)
    nodes = {
        "input": nir.Input(input_type=np.array([lif_reservoir.input_size])),
        "input_weights": nir.Linear(weight=lif_reservoir.input_weights * gain),
        "lif": nir.CubaLIF(
            tau_syn=tau_syn,
            tau_mem=full(tau_mem),
            r=full(tau_mem / dt),
            v_leak=full(p["v_rest"] + p["resistance"] * p["bias_current"]),
            v_threshold=full(p["threshold"]),
            v_reset=full(p["v_reset"]),
            w_in=tau_syn / dt,
        ),
        "recurrent_weights": nir.Linear(weight=lif_reservoir.recurrent_weights * gain),
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
        nodes["trace"] = nir.LI(tau=tau_trace, r=tau_trace / dt, v_leak=np.zeros(n))
        nodes["readout"] = nir.Affine(weight=weights.T.copy(), bias=intercept)
        nodes["output"] = nir.Output(output_type=np.array([weights.shape[1]]))
        edges += [("lif", "trace"), ("trace", "readout"), ("readout", "output")]
    metadata = {"lif": {k: v for k, v in p.items() if v is not None}}
    if encoder is not None:
        metadata["encoder"] = _encoder_metadata(encoder)
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata={"dt": dt, "reservoir": metadata})


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


def _flattened(graph):
    """The nodes and edges of `graph` with every sub-graph (as snnTorch exports a recurrent
    layer) in place of its node: its nodes named `sub.name`, an edge into it going to what its
    Input feeds, an edge out of it leaving from what feeds its Output."""
    nodes, edges = {}, []
    entries, exits = {}, {}
    for name, node in graph.nodes.items():
        if not isinstance(node, type(graph)):
            nodes[name] = node
            continue
        inner_nodes, inner_edges = _flattened(node)
        kinds = {n: type(v).__name__ for n, v in inner_nodes.items()}
        ins = [n for n, k in kinds.items() if k == "Input"]
        outs = [n for n, k in kinds.items() if k == "Output"]
        entries[name] = [f"{name}.{t}" for s_, t in inner_edges if s_ in ins]
        exits[name] = [f"{name}.{s_}" for s_, t in inner_edges if t in outs]
        for n, v in inner_nodes.items():
            if n not in ins and n not in outs:
                nodes[f"{name}.{n}"] = v
        edges += [
            (f"{name}.{s_}", f"{name}.{t}")
            for s_, t in inner_edges
            if s_ not in ins and t not in outs
        ]
    for source, target in graph.edges:
        # An edge may name a sub-graph, or one of its Input/Output nodes (`sub.input`).
        source_node, target_node = source.split(".")[0], target.split(".")[0]
        for a in exits.get(source_node, [source]):
            for b in entries.get(target_node, [target]):
                edges.append((a, b))
    return nodes, edges


class _Parts:
    """The pieces of a supported graph: its input weights, neurons, recurrent weights and
    the nodes after the neurons."""

    def __init__(self, graph):
        nodes, edges = _flattened(graph)
        names = {name: type(node).__name__ for name, node in nodes.items()}
        for name, kind in names.items():
            if kind not in _SUPPORTED:
                raise ValueError(
                    f"from_nir: node {name!r} is a {kind}, which is not supported; expected "
                    "Input -> Affine/Linear -> CubaLIF or LIF (with an optional recurrent "
                    "Affine/Linear) -> Output, optionally through LI -> Affine/Linear"
                )
        self.successors = {name: [] for name in names}
        self.predecessors = {name: [] for name in names}
        for source, target in edges:
            for end in (source, target):
                if end not in names:
                    raise ValueError(f"from_nir: an edge names the missing node {end!r}")
            self.successors[source].append(target)
            self.predecessors[target].append(source)
        self.nodes = nodes
        neurons = [name for name, kind in names.items() if kind in ("CubaLIF", "LIF")]
        if len(neurons) != 1:
            raise ValueError(f"from_nir: expected one CubaLIF or LIF node, found {len(neurons)}")
        self.lif = neurons[0]
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
                "from_nir: the Input must feed one Affine/Linear node that feeds the neurons "
                "(CubaLIF or LIF)"
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
            raise ValueError(f"from_nir: the neurons have unsupported inputs from {extra}")
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
                "from_nir: after the neurons expected an Output, or LI -> Affine/Linear -> Output"
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
    """The one value of a per-neuron parameter, or ValueError naming the node's type and the
    field when neurons differ."""
    values = np.asarray(getattr(node, field), dtype=np.float64).ravel()
    if values.size == 0 or not np.all(values == values[0]):
        raise ValueError(
            f"from_nir: the {type(node).__name__}'s {field} differs between neurons; the LIF "
            "reservoir has one value for all"
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


def _dt_seconds(graph, stored, dt_ms):
    """The time step in seconds: `dt_ms`, else the graph's (written here, or `dt` in its
    metadata), else 1e-4 (snnTorch's)."""
    if dt_ms is not None:
        return float(dt_ms) * _SECONDS_PER_MS
    if "dt_ms" in stored:
        return float(stored["dt_ms"]) * _SECONDS_PER_MS
    metadata = graph.metadata or {}
    if "dt" in metadata:
        return float(np.asarray(metadata["dt"]).ravel()[0])
    return 1e-4


class DrivenLifReservoir(LifReservoir):
    """A `LifReservoir` whose synapses also take a constant drive every step (the biases of an
    imported graph's Affine nodes): it runs as a reservoir of one more input channel, held at
    1, which `run` and `run_many` append; `input_size` is the graph's."""

    @property
    def input_size(self):
        """Input channels K (without the constant one)."""
        return self._engine.input_size - 1

    @staticmethod
    def _driven(x):
        x = np.asarray(x, dtype=np.float64)
        return np.concatenate([x, np.ones(x.shape[:-1] + (1,))], axis=-1)

    def run(self, inputs):
        """Features (T x N) after each row of `inputs` (T x K), from the current state."""
        return super().run(self._driven(inputs))

    def run_many(self, inputs):
        """The features of every sequence (3-D array or list), each run from rest."""
        if isinstance(inputs, (list, tuple)):
            return super().run_many([self._driven(x) for x in inputs])
        return super().run_many(self._driven(inputs))


def from_nir(graph, device="auto", dt_ms=None, **params):
    """A `LifReservoir` from a NIR graph (a `nir.NIRGraph` or a path to a .nir file) of
    Input -> Affine/Linear -> CubaLIF or LIF (optionally with a recurrent Affine/Linear) ->
    Output,
    optionally with a readout LI -> Affine/Linear before the Output (see
    `readout_from_nir`), as Norse and snnTorch export them. Every node type else is a
    ValueError naming it, and so is a parameter the reservoir cannot take, with its field.

    The neurons must share tau_syn, tau_mem, r, v_leak, v_threshold and v_reset (the
    reservoir has one value of each); w_in may differ. Times are read as seconds and the
    graph is stepped as the importers step it: forward Euler (`integration="euler"`) at `dt_ms`,
    else the graph's time step (written here, or `dt` in its metadata), else 0.1 ms
    (snnTorch's), and no refractory period; a spike through weight w adds w_in w dt / tau_syn
    to the synaptic current, and R = r. A graph written here comes back as it was exported
    (its metadata keeps every `[lif]` value). The weights may have any signs (Dale's law is
    how this engine draws them, not a rule on imported ones). Biases of the Affine nodes are a
    constant drive of the synapses every step: the result is then a `DrivenLifReservoir`.
    `params` are further `[lif]` keys (e.g. `features`), and win over the graph.
    """
    graph = _graph(graph)
    parts = _Parts(graph)
    lif = parts.nodes[parts.lif]
    stored = dict(graph.metadata.get("reservoir", {}).get("lif", {})) if graph.metadata else {}
    dt = _dt_seconds(graph, stored, dt_ms)
    if isinstance(lif, _nir().LIF):
        # No synapse: the input is the current of its step only, a synapse of tau_syn = dt
        # under forward Euler, moving I by the weighted input (w_in = 1).
        tau_syn, tau_mem, w_in = dt, _uniform(lif, "tau"), np.ones(1)
        if "integration" in params and params["integration"] != "euler":
            raise ValueError(
                "from_nir: a LIF node (no synapse) runs here with integration='euler' only"
            )
    else:
        tau_syn = _uniform(lif, "tau_syn")
        tau_mem = _uniform(lif, "tau_mem")
        w_in = np.asarray(lif.w_in, dtype=np.float64).ravel()
    for field, value in (("tau_syn", tau_syn), ("tau_mem", tau_mem)):
        if not value > 0:
            raise ValueError(
                f"from_nir: the {type(lif).__name__}'s {field} must be > 0, got {value}"
            )
    r = _uniform(lif, "r")
    v_leak = _uniform(lif, "v_leak")
    input_weights, input_bias = _weight(parts.nodes[parts.input_weights], parts.input_weights)
    n = input_weights.shape[0]
    if parts.recurrent is None:
        recurrent, recurrent_bias = np.zeros((n, n)), np.zeros(n)
    else:
        recurrent, recurrent_bias = _weight(parts.nodes[parts.recurrent], parts.recurrent)
    if w_in.size not in (1, n):
        raise ValueError(f"from_nir: the CubaLIF's w_in has {w_in.size} values for {n} neurons")
    jump = np.broadcast_to(w_in * dt / tau_syn, (n,))
    resistance = r
    if "resistance" in stored and float(stored["resistance"]) > 0:
        # Written here: the weights carry R dt / tau_mem and r = tau_mem / dt; back to R.
        resistance = float(stored["resistance"])
        jump = jump * (r / resistance)
    input_weights = input_weights * jump[:, None]
    recurrent = recurrent * jump[:, None]
    drive = (input_bias + recurrent_bias) * jump
    v_rest, bias = v_leak, 0.0
    if "v_rest" in stored and "bias_current" in stored:
        if np.isclose(float(stored["v_rest"]) + resistance * float(stored["bias_current"]), v_leak):
            v_rest, bias = float(stored["v_rest"]), float(stored["bias_current"])
    lif_params = {
        "dt_ms": _prefer(stored.get("dt_ms"), dt / _SECONDS_PER_MS),
        "tau_syn_ms": _prefer(stored.get("tau_syn_ms"), tau_syn / _SECONDS_PER_MS),
        "tau_m_ms": _prefer(stored.get("tau_m_ms"), tau_mem / _SECONDS_PER_MS),
        "resistance": resistance,
        "v_rest": v_rest,
        "bias_current": bias,
        "threshold": _uniform(lif, "v_threshold"),
        "v_reset": 0.0 if getattr(lif, "v_reset", None) is None else _uniform(lif, "v_reset"),
        "refractory_ms": float(stored.get("refractory_ms", 0.0)),
        "integration": str(stored.get("integration", "exact" if stored else "euler")),
        "input_mode": "synaptic",
    }
    if "trace_tau_ms" in stored:
        lif_params["trace_tau_ms"] = float(stored["trace_tau_ms"])
    if "features" in stored:
        lif_params["features"] = str(stored["features"])
    if "count_window_steps" in stored:
        lif_params["count_window_steps"] = int(stored["count_window_steps"])
    trace = [s for s in parts.successors[parts.lif] if parts.names[s] == "LI"]
    if trace:
        tau_trace = _uniform(parts.nodes[trace[0]], "tau") / _SECONDS_PER_MS
        lif_params["trace_tau_ms"] = _prefer(stored.get("trace_tau_ms"), tau_trace)
    lif_params.update(params)
    try:
        if np.any(drive != 0):
            return DrivenLifReservoir.from_weights(
                recurrent, np.hstack([input_weights, drive[:, None]]), device=device, **lif_params
            )
        return LifReservoir.from_weights(recurrent, input_weights, device=device, **lif_params)
    except ValueError as error:
        kind = type(lif).__name__
        raise ValueError(
            f"from_nir: node {parts.lif!r} ({kind}) as a LIF reservoir: {error}"
        ) from None


def readout_from_nir(graph):
    """The readout at the end of a NIR graph that `from_nir` reads, as (weights N x M,
    intercept M) to apply to the reservoir's trace features (`features @ weights +
    intercept`), or None when the graph outputs the neurons' spikes."""
    return _Parts(_graph(graph)).readout()
