"""NIR export and import of the LIF reservoir: the graph's nodes and edges, files written and
read by the nir package, round trips with the same features bit for bit, and the graphs NIR
cannot hold."""

import numpy as np
import pytest

nir = pytest.importorskip("nir", reason="the nir package is not installed (pip install nir)")

from reservoir import EchoStateNetwork, Readout  # noqa: E402
from reservoir.nir import from_nir, readout_from_nir, to_nir  # noqa: E402
from reservoir.spikes import LifReservoir, encode_rate  # noqa: E402

PARAMS = dict(size=60, dt_ms=1.0, input_mode="synaptic", refractory_ms=0.0, device="cpu", seed=11)


@pytest.fixture(scope="module")
def spikes():
    t = np.arange(300)[:, None]
    return encode_rate(0.5 + 0.5 * np.sin(t * np.array([0.04, 0.09])), seed=2)


@pytest.fixture()
def lif():
    return LifReservoir(input_size=2, **PARAMS)


def test_export_has_the_expected_nodes_and_edges(lif):
    graph = to_nir(lif)
    kinds = {name: type(node).__name__ for name, node in graph.nodes.items()}
    assert kinds == {
        "input": "Input",
        "input_weights": "Linear",
        "lif": "CubaLIF",
        "recurrent_weights": "Linear",
        "output": "Output",
    }
    assert set(graph.edges) == {
        ("input", "input_weights"),
        ("input_weights", "lif"),
        ("lif", "recurrent_weights"),
        ("recurrent_weights", "lif"),
        ("lif", "output"),
    }
    neurons = graph.nodes["lif"]
    dt = 1e-3
    np.testing.assert_array_equal(neurons.tau_syn, np.full(60, 0.005))
    np.testing.assert_array_equal(neurons.tau_mem, np.full(60, 0.02))
    # The importers' conventions: a spike through w moves I by w, I moves v by I, per step.
    np.testing.assert_array_equal(neurons.w_in, neurons.tau_syn / dt)
    np.testing.assert_array_equal(neurons.r, neurons.tau_mem / dt)
    np.testing.assert_array_equal(neurons.v_leak, np.full(60, 0.9))  # v_rest + R * bias
    np.testing.assert_array_equal(neurons.v_threshold, np.ones(60))
    np.testing.assert_array_equal(neurons.v_reset, np.zeros(60))
    gain = 1.0 * dt / 0.02  # R dt / tau_mem
    weights = graph.nodes["recurrent_weights"].weight
    np.testing.assert_array_equal(weights, lif.recurrent_weights * gain)
    np.testing.assert_array_equal(graph.nodes["input_weights"].weight, lif.input_weights * gain)
    assert graph.metadata["dt"] == dt
    np.testing.assert_array_equal(graph.nodes["input"].input_type["input"], [2])
    np.testing.assert_array_equal(graph.nodes["output"].output_type["output"], [60])


def test_round_trip_gives_the_same_features_bit_for_bit(lif, spikes, tmp_path):
    expected = lif.run(spikes)
    path = tmp_path / "lif.nir"
    nir.write(path, to_nir(lif))
    graph = nir.read(path)
    assert {type(n).__name__ for n in graph.nodes.values()} >= {"CubaLIF", "Linear"}
    for source in (to_nir(lif), graph, path, str(path)):
        back = from_nir(source, device="cpu")
        assert back.params["dt_ms"] == 1.0 and back.params["integration"] == "exact"
        assert back.params["resistance"] == lif.params["resistance"]
        # The weights come back to within an f64 rounding of the scale, the same in f32.
        np.testing.assert_allclose(back.recurrent_weights, lif.recurrent_weights, rtol=1e-15)
        np.testing.assert_array_equal(back.run(spikes), expected)


def test_refractory_period_is_refused_unless_lossy_and_survives_here(spikes, tmp_path):
    lif = LifReservoir(input_size=2, **{**PARAMS, "refractory_ms": 3.0})
    with pytest.raises(ValueError, match="no refractory period.*lossy=True"):
        to_nir(lif)
    with pytest.warns(UserWarning, match="fire again on the step after a spike"):
        graph = to_nir(lif, lossy=True)
    nir.write(tmp_path / "refractory.nir", graph)
    back = from_nir(tmp_path / "refractory.nir", device="cpu")
    assert back.params["refractory_ms"] == 3.0
    np.testing.assert_array_equal(back.run(spikes), lif.run(spikes))


def test_readout_and_encoder_are_exported(lif, spikes, tmp_path):
    features = lif.run(spikes)
    targets = np.stack([spikes[:, 0], spikes[:, 1]], axis=1)
    readout = Readout.ridge(features, targets, 1e-3)
    encoder = {"kind": "rate", "steps": 1, "gain": 1.0}
    graph = to_nir(lif, encoder=encoder, readout=readout)
    assert ("lif", "trace") in graph.edges and ("readout", "output") in graph.edges
    trace = graph.nodes["trace"]
    np.testing.assert_array_equal(trace.tau, np.full(60, 0.02))
    np.testing.assert_array_equal(trace.r, trace.tau / 1e-3)
    np.testing.assert_array_equal(graph.nodes["readout"].weight, readout.weights.T)
    np.testing.assert_array_equal(graph.nodes["output"].output_type["output"], [2])
    nir.write(tmp_path / "readout.nir", graph)
    read = nir.read(tmp_path / "readout.nir")
    assert read.metadata["reservoir"]["encoder"]["kind"] == "rate"
    weights, intercept = readout_from_nir(read)
    np.testing.assert_array_equal(weights, readout.weights)
    np.testing.assert_array_equal(intercept, readout.intercept)
    back = from_nir(read, device="cpu")
    again = back.run(spikes)
    np.testing.assert_array_equal(again, features)
    # NumPy's product sums in the order its BLAS picks for the CPU at hand, so the NIR readout
    # applied by NumPy agrees with the engine's own to rounding, not bit for bit.
    np.testing.assert_allclose(again @ weights + intercept, readout.predict(features), rtol=1e-12)
    assert readout_from_nir(to_nir(lif)) is None


def test_what_nir_cannot_express_is_refused(lif, spikes):
    with pytest.raises(ValueError, match="input_mode='current'"):
        to_nir(LifReservoir(input_size=2, **{**PARAMS, "input_mode": "current"}))
    with pytest.raises(TypeError, match="tanh"):
        to_nir(EchoStateNetwork(input_size=2, size=20, device="cpu"))
    membrane = LifReservoir(input_size=2, **{**PARAMS, "features": "membrane"})
    readout = Readout.ridge(membrane.run(spikes), spikes, 1e-3)
    with pytest.raises(ValueError, match="membrane features"):
        to_nir(membrane, readout=readout)
    with pytest.raises(ValueError, match="encoder must be a dict"):
        to_nir(lif, encoder={"kind": "morse"})


def _cuba(n, tau_syn=0.004, w_in=1.0, **extra):
    values = dict(
        tau_syn=np.full(n, tau_syn),
        tau_mem=np.full(n, 0.01),
        r=np.full(n, 2.0),
        v_leak=np.full(n, 0.1),
        v_threshold=np.full(n, 1.0),
        v_reset=np.zeros(n),
        w_in=np.full(n, w_in),
    )
    values.update(extra)
    return nir.CubaLIF(**values)


def _graph(w_in, recurrent, neurons, input_bias=None, recurrent_bias=None):
    n, k = w_in.shape
    fc = nir.Linear(weight=w_in) if input_bias is None else nir.Affine(weight=w_in, bias=input_bias)
    loop = (
        nir.Linear(weight=recurrent)
        if recurrent_bias is None
        else nir.Affine(weight=recurrent, bias=recurrent_bias)
    )
    return nir.NIRGraph(
        nodes={
            "in": nir.Input(input_type=np.array([k])),
            "fc": fc,
            "neurons": neurons,
            "loop": loop,
            "out": nir.Output(output_type=np.array([n])),
        },
        edges=[
            ("in", "fc"),
            ("fc", "neurons"),
            ("neurons", "loop"),
            ("loop", "neurons"),
            ("neurons", "out"),
        ],
    )


def test_general_graphs_are_imported_by_the_importers_equations(spikes):
    rng = np.random.default_rng(0)
    w_in = rng.uniform(-1, 1, size=(5, 2))
    # Signs mixed within a column: Dale's law is not asked of imported weights.
    recurrent = rng.uniform(-0.5, 0.5, size=(5, 5))
    np.fill_diagonal(recurrent, 0.0)
    lif = from_nir(_graph(w_in, recurrent, _cuba(5)), device="cpu", dt_ms=0.5)
    params = lif.params
    assert params["dt_ms"] == 0.5 and params["input_mode"] == "synaptic"
    assert params["integration"] == "euler"
    assert params["tau_syn_ms"] == pytest.approx(4.0) and params["tau_m_ms"] == pytest.approx(10.0)
    assert (params["v_rest"], params["bias_current"], params["resistance"]) == (0.1, 0.0, 2.0)
    assert params["refractory_ms"] == 0.0
    # A spike through weight w changes the current by w_in * w * dt / tau_syn in a step.
    np.testing.assert_allclose(lif.input_weights, w_in * 0.0005 / 0.004)
    np.testing.assert_allclose(lif.recurrent_weights, recurrent * 0.0005 / 0.004)
    assert lif.run(spikes).shape == (300, 5)


def test_affine_biases_drive_the_synapses_every_step(spikes):
    rng = np.random.default_rng(1)
    w_in = rng.uniform(-1, 1, size=(6, 2))
    recurrent = rng.uniform(-0.3, 0.3, size=(6, 6))
    b_in, b_rec = rng.uniform(0, 0.2, size=6), rng.uniform(-0.1, 0.1, size=6)
    neurons = _cuba(6, w_in=8.0, v_leak=np.zeros(6))
    driven = from_nir(_graph(w_in, recurrent, neurons, b_in, b_rec), device="cpu", dt_ms=0.5)
    assert driven.input_size == 2
    jump = 8.0 * 0.0005 / 0.004
    by_hand = LifReservoir.from_weights(
        recurrent * jump,
        np.hstack([w_in * jump, ((b_in + b_rec) * jump)[:, None]]),
        device="cpu",
        **{k: v for k, v in driven.params.items() if k not in ("size", "input_size")},
    )
    ones = np.hstack([spikes, np.ones((len(spikes), 1))])
    np.testing.assert_array_equal(driven.run(spikes), by_hand.run(ones))


def test_a_lif_node_is_neurons_without_a_synapse(spikes):
    rng = np.random.default_rng(2)
    w_in = rng.uniform(0, 1, size=(4, 2))
    neurons = nir.LIF(
        tau=np.full(4, 0.002), r=np.full(4, 20.0), v_leak=np.zeros(4), v_threshold=np.ones(4)
    )
    lif = from_nir(_graph(w_in, np.zeros((4, 4)), neurons), device="cpu", dt_ms=0.1)
    params = lif.params
    assert params["integration"] == "euler" and params["tau_syn_ms"] == pytest.approx(0.1)
    assert params["tau_m_ms"] == pytest.approx(2.0) and params["resistance"] == 20.0
    # Euler with tau_syn = dt: the synaptic current is this step's input only.
    np.testing.assert_allclose(lif.input_weights, w_in)
    # A time constant below the step (as Norse 1.1 writes tau: dt * tau) names node and field.
    fast = nir.LIF(tau=np.full(4, 5e-7), r=np.ones(4), v_leak=np.zeros(4), v_threshold=np.ones(4))
    with pytest.raises(ValueError, match="node 'neurons' \\(LIF\\).*tau_m_ms"):
        from_nir(_graph(w_in, np.zeros((4, 4)), fast), device="cpu", dt_ms=0.1)


def euler_spikes(graph, inputs, dt):
    """The spikes of a NIR graph of Input -> Linear -> CubaLIF (+ recurrent Linear) stepped as
    Norse steps it: forward Euler, the synapse first, then the membrane, v > threshold."""
    lif = graph.nodes["lif"]
    w_in_weights = graph.nodes["input_weights"].weight
    w = graph.nodes["recurrent_weights"].weight
    i = np.zeros(w.shape[0])
    v = np.zeros(w.shape[0])
    z = np.zeros(w.shape[0])
    trains = []
    for u in inputs:
        x = lif.w_in * (w_in_weights @ u + w @ z)
        i = i + dt / lif.tau_syn * ((lif.v_leak - i) + x)
        v = v + dt / lif.tau_mem * ((lif.v_leak - v) + lif.r * i)
        z = (v > lif.v_threshold).astype(float)
        v = np.where(z > 0, lif.v_reset, v)
        trains.append(z)
    return np.array(trains)


def test_euler_integration_fires_the_spikes_of_the_importers_step():
    rng = np.random.default_rng(5)
    inputs = (rng.random((600, 3)) < 0.05).astype(float)
    params = dict(PARAMS, dt_ms=0.1, size=100, bias_current=0.0, integration="euler")
    # Spike counts over a window of one step: each step's spikes.
    params.update(spectral_radius=1.0, input_scaling=10.0, seed=4)
    params.update(features="counts", count_window_steps=1)
    lif = LifReservoir(input_size=3, **params)
    graph = to_nir(lif)
    theirs = euler_spikes(graph, inputs, 1e-4)
    ours = lif.run(inputs) > 0
    assert theirs.sum() > 100, theirs.sum()
    assert np.array_equal(ours, theirs.astype(bool))


def test_unsupported_graphs_name_what_is_wrong():
    if_node = nir.IF(r=np.ones(3), v_threshold=np.ones(3))
    graph = nir.NIRGraph.from_list(nir.Linear(weight=np.ones((3, 2))), if_node)
    with pytest.raises(ValueError, match="is a IF, which is not supported"):
        from_nir(graph)
    mixed = _cuba(3, tau_mem=np.array([0.01, 0.02, 0.01]))
    graph = nir.NIRGraph.from_list(nir.Linear(weight=np.ones((3, 2))), mixed)
    with pytest.raises(ValueError, match="tau_mem differs between neurons"):
        from_nir(graph)
    no_weights = nir.NIRGraph.from_list(_cuba(3))
    with pytest.raises(ValueError, match="Affine/Linear node that feeds the neurons"):
        from_nir(no_weights)
    with pytest.raises(TypeError, match="nir.NIRGraph or a path"):
        from_nir(42)


def test_export_of_a_large_network_is_refused_with_a_clear_message():
    lif = LifReservoir(input_size=1, connection_prob=0.001, **{**PARAMS, "size": 12000})
    with pytest.raises(ValueError, match="use recurrent_csr"):
        to_nir(lif)
