#!/usr/bin/env python3
"""The LIF reservoir and Norse and snnTorch through NIR, both ways, on the same input spikes.

Ours -> theirs: a reservoir of `--neurons` LIF neurons (synaptic input, no refractory period,
no bias, v_rest = 0) exported by `reservoir.nir.to_nir`, imported by `norse.torch.from_nir`
(dt = 0.1 ms) and by snnTorch's `import_from_nir`, once with our forward-Euler step
(`integration="euler"`) and once with exact integration. snnTorch's importer fires nothing
on it; "snnTorch, wiring corrected" steps snnTorch's own snn.RSynaptic neurons with the
graph's input and recurrent weights where the graph puts them. snnTorch resets a neuron a step
late (the step after a spike starts from zero and drops its input), which is our refractory
period of one step: that row compares with it.

Theirs -> ours: an snnTorch network (nn.Linear into an all-to-all snn.RSynaptic, reset to
zero, its default biases) exported by `export_to_nir`, run natively in snnTorch, imported by
Norse (the reference for NIR's equations), by snnTorch's own importer and by
`reservoir.nir.from_nir` (and with a refractory period of one step, snnTorch's late reset).

For each pair it prints the spike totals, the correlation of the per-neuron spike counts and
the first step where the spike trains differ. With `--fixtures DIR` it writes the graphs, the
input and the spike trains of Norse and snnTorch there (the torch-free tests read them).

    python3 benches/python/nir_interop.py --neurons 100 --steps 1000
"""

import argparse
import copy
import os

import nir
import numpy as np
import reservoir
import torch
from reservoir.nir import from_nir, to_nir
from reservoir.spikes import LifReservoir

TABLE_HEADER = (
    "| pair | spikes (reference) | spikes | difference | count correlation "
    "| first step that differs |\n|---|---|---|---|---|---|"
)
DT = 1e-4  # seconds: the reservoir's dt_ms = 0.1, and the step snnTorch's importer assumes


def input_spikes(steps, channels, rate, seed):
    """Bernoulli spikes, `rate` per step and channel."""
    return (np.random.default_rng(seed).random((steps, channels)) < rate).astype(
        np.float64
    )


def reservoir_spikes(lif, inputs):
    """Our spike trains: counts over a window of one step (the reservoir was built so)."""
    return lif.run(inputs) > 0


def stepped(module, inputs):
    """The spike trains of a module that nirtorch built, stepped one input row at a time."""
    state, trains = None, []
    with torch.no_grad():
        for u in inputs:
            z, state = module(torch.tensor(u, dtype=torch.float32)[None], state)
            trains.append(z[0].numpy() > 0)
    return np.array(trains)


def norse_spikes(graph, inputs):
    import norse.torch as norse

    return stepped(norse.from_nir(copy.deepcopy(graph), dt=DT), inputs)


def snntorch_imported_spikes(graph, inputs):
    import snntorch.utils
    from snntorch.import_nir import import_from_nir

    module = import_from_nir(copy.deepcopy(graph))  # it rewrites the graph it is given
    snntorch.utils.reset(module)
    return stepped(module, inputs)


def rsynaptic_spikes(
    input_weights, recurrent, alpha, beta, threshold, inputs, bias=None
):
    """snnTorch's snn.RSynaptic neurons (reset to zero) driven by `input_weights` @ u (+
    `bias`) and by their own spikes through `recurrent`: the wiring NIR's graph says. Its reset
    comes a step late (the step after a spike starts from zero, its input dropped): the LIF
    reservoir's refractory period of one step."""
    import snntorch as snn

    n = recurrent.shape[0]
    neurons = snn.RSynaptic(
        alpha=alpha,
        beta=beta,
        threshold=threshold,
        reset_mechanism="zero",
        all_to_all=True,
        linear_features=n,
    )
    neurons.recurrent.weight.data = torch.tensor(recurrent, dtype=torch.float32)
    neurons.recurrent.bias.data = torch.tensor(
        np.zeros(n) if bias is None else bias, dtype=torch.float32
    )
    w_in = torch.tensor(input_weights, dtype=torch.float32)
    spk, syn, mem = neurons.reset_mem()
    trains = []
    with torch.no_grad():
        for u in inputs:
            current = w_in @ torch.tensor(u, dtype=torch.float32)
            spk, syn, mem = neurons(current[None], spk, syn, mem)
            trains.append(spk[0].numpy() > 0)
    return np.array(trains)


def corrected_snntorch_spikes(graph, inputs):
    """snnTorch's neurons on our exported graph, wired as the graph says."""
    lif = graph.nodes["lif"]
    alpha = float(1 - DT / lif.tau_syn[0])
    beta = float(1 - DT / lif.tau_mem[0])
    # snnTorch's synapse adds w_in * dt / tau_syn (= 1 here) times the input.
    scale = lif.w_in[:, None] * DT / lif.tau_syn[:, None]
    return rsynaptic_spikes(
        graph.nodes["input_weights"].weight * scale,
        graph.nodes["recurrent_weights"].weight * scale,
        alpha,
        beta,
        float(lif.v_threshold[0]),
        inputs,
    )


def compare(name, reference, trains):
    """A row of the table: totals, per-neuron count correlation, first differing step."""
    counts_a, counts_b = reference.sum(axis=0), trains.sum(axis=0)
    if counts_a.std() > 0 and counts_b.std() > 0:
        correlation = float(np.corrcoef(counts_a, counts_b)[0, 1])
    else:
        correlation = float("nan")
    differ = np.nonzero((reference != trains).any(axis=1))[0]
    first = int(differ[0]) if differ.size else None
    total_a, total_b = int(reference.sum()), int(trains.sum())
    print(
        f"| {name} | {total_a} | {total_b} | {100 * (total_b - total_a) / max(total_a, 1):+.1f} % "
        f"| {correlation:.4f} | {'none' if first is None else first} |"
    )
    return {"total_reference": total_a, "total": total_b, "correlation": correlation}


def ours_to_theirs(args, inputs, fixtures):
    print(f"\nOurs -> theirs ({args.neurons} neurons, {args.steps} steps of 0.1 ms)\n")
    print(TABLE_HEADER)
    params = {
        "input_size": inputs.shape[1],
        "size": args.neurons,
        "dt_ms": 0.1,
        "input_mode": "synaptic",
        "refractory_ms": 0.0,
        "bias_current": 0.0,
        "v_rest": 0.0,
        "spectral_radius": args.spectral_radius,
        "input_scaling": args.input_scaling,
        "features": "counts",
        "count_window_steps": 1,
        "seed": args.seed,
        "device": "cpu",
    }
    for integration in ("euler", "exact"):
        lif = LifReservoir(**params, integration=integration)
        graph = to_nir(lif)
        ours = reservoir_spikes(lif, inputs)
        norse = norse_spikes(graph, inputs)
        compare(f"ours ({integration}) vs Norse", norse, ours)
        if integration == "exact":
            continue
        imported = snntorch_imported_spikes(graph, inputs)
        compare(f"ours ({integration}) vs snnTorch import", imported, ours)
        corrected = corrected_snntorch_spikes(graph, inputs)
        compare(f"ours ({integration}) vs snnTorch, wiring corrected", corrected, ours)
        # snnTorch resets a step late: our refractory period of one step, the same weights.
        late = LifReservoir(**{**params, "refractory_ms": 0.1}, integration=integration)
        compare(
            f"ours ({integration}, refractory one step) vs snnTorch, wiring corrected",
            corrected,
            reservoir_spikes(late, inputs),
        )
        if fixtures:
            nir.write(os.path.join(fixtures, "ours.nir"), graph)
            np.savez_compressed(
                os.path.join(fixtures, "ours_spikes.npz"),
                inputs=inputs,
                norse=norse,
                snntorch_corrected=corrected,
            )


def network_spikes(network, inputs):
    """The spike trains of an snnTorch network of hidden-state layers, run as snnTorch runs it."""
    import snntorch.utils

    snntorch.utils.reset(network)
    trains = []
    with torch.no_grad():
        for u in inputs:
            trains.append(
                network(torch.tensor(u, dtype=torch.float32)[None])[0].numpy() > 0
            )
    return np.array(trains)


def snntorch_network(k, n, seed):
    """nn.Linear(k, n) into snn.RSynaptic(n, all to all): snnTorch's defaults (biases on both
    Linear layers), reset to zero, its weights scaled to fire irregularly."""
    import snntorch as snn

    torch.manual_seed(seed)
    fc = torch.nn.Linear(k, n)
    neurons = snn.RSynaptic(
        alpha=0.9,
        beta=0.95,
        threshold=1.0,
        reset_mechanism="zero",
        all_to_all=True,
        linear_features=n,
        init_hidden=True,
    )
    with torch.no_grad():
        fc.weight.mul_(3.0)
        fc.bias.mul_(0.1)
        neurons.recurrent.weight.mul_(1.5)
        neurons.recurrent.bias.mul_(0.1)
    return torch.nn.Sequential(fc, neurons)


def theirs_to_ours(args, inputs, fixtures):
    from snntorch.export_nir import export_to_nir

    print(
        f"\nTheirs -> ours (snnTorch nn.Linear + snn.RSynaptic, {args.neurons} neurons)\n"
    )
    print(TABLE_HEADER)
    counts = {
        "features": "counts",
        "count_window_steps": 1,
        "device": "cpu",
        "dt_ms": 0.1,
    }
    for recurrent_bias in (True, False):
        network = snntorch_network(inputs.shape[1], args.neurons, args.seed)
        if not recurrent_bias:
            with torch.no_grad():
                network[1].recurrent.bias.zero_()
        which = "biases" if recurrent_bias else "no recurrent bias"
        native = network_spikes(network, inputs)
        graph = export_to_nir(network, torch.zeros(inputs.shape[1]))
        ours = reservoir_spikes(from_nir(graph, **counts), inputs)
        norse = norse_spikes(graph, inputs)
        compare(f"ours (from_nir) vs Norse import, {which}", norse, ours)
        compare(f"snnTorch native vs Norse import, {which}", norse, native)
        late = reservoir_spikes(from_nir(graph, refractory_ms=0.1, **counts), inputs)
        compare(
            f"ours (from_nir, refractory one step) vs snnTorch native, {which}",
            native,
            late,
        )
        imported = snntorch_imported_spikes(graph, inputs)
        compare(f"snnTorch import vs snnTorch native, {which}", native, imported)
        if fixtures:
            name = "snntorch" if recurrent_bias else "snntorch_unbiased"
            nir.write(os.path.join(fixtures, f"{name}.nir"), graph)
            np.savez_compressed(
                os.path.join(fixtures, f"{name}_spikes.npz"),
                inputs=inputs,
                norse=norse,
                snntorch_native=native,
            )


def norse_to_ours(args, inputs):
    """A Norse network (nn.Linear into LIFBoxCell, tau_mem = 5 ms) exported by Norse's
    `to_nir`, against its own run, Norse's import and ours."""
    import norse.torch as norse

    print(f"\nNorse -> ours (nn.Linear + LIFBoxCell, {args.neurons} neurons)\n")
    torch.manual_seed(args.seed)
    cell = norse.LIFBoxCell(
        norse.LIFBoxParameters(tau_mem_inv=torch.tensor(200.0)), dt=DT
    )
    model = norse.SequentialState(torch.nn.Linear(inputs.shape[1], args.neurons), cell)
    with torch.no_grad():
        model[0].weight.mul_(20.0)
    state, trains = None, []
    with torch.no_grad():
        for u in inputs:
            z, state = model(torch.tensor(u, dtype=torch.float32)[None], state)
            trains.append(z[0].numpy() > 0)
    native = np.array(trains)
    graph = norse.to_nir(model, torch.zeros(1, inputs.shape[1]), dt=DT)
    taus = {
        name: np.unique(node.tau).tolist()
        for name, node in graph.nodes.items()
        if isinstance(node, nir.LIF)
    }
    print(f"tau_mem 0.005 s written as {taus} (seconds)")
    print(TABLE_HEADER)
    compare("Norse import vs Norse native", native, norse_spikes(graph, inputs))
    try:
        ours = reservoir_spikes(
            from_nir(
                graph, device="cpu", dt_ms=0.1, features="counts", count_window_steps=1
            ),
            inputs,
        )
        compare("ours (from_nir) vs Norse native", native, ours)
    except ValueError as error:
        print(f"ours (from_nir): {error}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--neurons", type=int, default=100)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=5)
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument("--spectral-radius", type=float, default=1.0)
    parser.add_argument("--input-scaling", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--fixtures", help="write graphs, input and spike trains here")
    args = parser.parse_args()
    import norse
    import snntorch

    print(
        f"reservoir {reservoir.__name__}, nir {nir.__version__}, torch {torch.__version__}, "
        f"norse {getattr(norse, '__version__', '?')}, snntorch {snntorch.__version__}"
    )
    if args.fixtures:
        os.makedirs(args.fixtures, exist_ok=True)
    inputs = input_spikes(args.steps, args.channels, args.rate, args.seed)
    ours_to_theirs(args, inputs, args.fixtures)
    theirs_to_ours(args, inputs, args.fixtures)
    norse_to_ours(args, inputs)


if __name__ == "__main__":
    main()
