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
    np.testing.assert_array_equal(neurons.tau_syn, np.full(60, 0.005))
    np.testing.assert_array_equal(neurons.tau_mem, np.full(60, 0.02))
    np.testing.assert_array_equal(neurons.w_in, neurons.tau_syn)
    np.testing.assert_array_equal(neurons.v_leak, np.full(60, 0.9))  # v_rest + R * bias
    np.testing.assert_array_equal(neurons.v_threshold, np.ones(60))
    np.testing.assert_array_equal(neurons.v_reset, np.zeros(60))
    np.testing.assert_array_equal(graph.nodes["recurrent_weights"].weight, lif.recurrent_weights)
    np.testing.assert_array_equal(graph.nodes["input_weights"].weight, lif.input_weights)
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
        assert back.params["dt_ms"] == 1.0
        np.testing.assert_array_equal(back.recurrent_weights, lif.recurrent_weights)
        np.testing.assert_array_equal(back.run(spikes), expected)


def test_refractory_period_warns_and_survives_here(spikes, tmp_path):
    lif = LifReservoir(input_size=2, **{**PARAMS, "refractory_ms": 3.0})
    with pytest.warns(UserWarning, match="no refractory period"):
        graph = to_nir(lif)
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
    np.testing.assert_array_equal(trace.r, trace.tau)
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


def test_general_graphs_are_imported_by_the_nir_equations(spikes):
    rng = np.random.default_rng(0)
    w_in = rng.uniform(-1, 1, size=(5, 2))
    recurrent = np.abs(rng.uniform(0, 0.5, size=(5, 5))) * np.where(np.arange(5) < 4, 1, -1)
    np.fill_diagonal(recurrent, 0.0)
    graph = nir.NIRGraph(
        nodes={
            "in": nir.Input(input_type=np.array([2])),
            "fc": nir.Affine(weight=w_in, bias=np.zeros(5)),
            "neurons": _cuba(5),
            "loop": nir.Linear(weight=recurrent),
            "out": nir.Output(output_type=np.array([5])),
        },
        edges=[
            ("in", "fc"),
            ("fc", "neurons"),
            ("neurons", "loop"),
            ("loop", "neurons"),
            ("neurons", "out"),
        ],
    )
    lif = from_nir(graph, device="cpu", dt_ms=0.5)
    params = lif.params
    assert params["dt_ms"] == 0.5 and params["input_mode"] == "synaptic"
    assert params["tau_syn_ms"] == pytest.approx(4.0) and params["tau_m_ms"] == pytest.approx(10.0)
    assert (params["v_rest"], params["bias_current"], params["resistance"]) == (0.1, 0.0, 2.0)
    assert params["refractory_ms"] == 0.0
    # A spike through weight w changes the current by w_in * w / tau_syn.
    np.testing.assert_allclose(lif.input_weights, w_in / 0.004)
    np.testing.assert_allclose(lif.recurrent_weights, recurrent / 0.004)
    np.testing.assert_array_equal(lif.excitatory, [True] * 4 + [False])
    assert lif.run(spikes).shape == (300, 5)


def test_unsupported_graphs_name_what_is_wrong():
    lif_node = nir.LIF(tau=np.ones(3), r=np.ones(3), v_leak=np.zeros(3), v_threshold=np.ones(3))
    graph = nir.NIRGraph.from_list(nir.Linear(weight=np.ones((3, 2))), lif_node)
    with pytest.raises(ValueError, match="is a LIF, which is not supported"):
        from_nir(graph)
    mixed = _cuba(3, tau_mem=np.array([0.01, 0.02, 0.01]))
    graph = nir.NIRGraph.from_list(nir.Linear(weight=np.ones((3, 2))), mixed)
    with pytest.raises(ValueError, match="tau_mem differs between neurons"):
        from_nir(graph)
    no_weights = nir.NIRGraph.from_list(_cuba(3))
    with pytest.raises(ValueError, match="Affine/Linear node that feeds the CubaLIF"):
        from_nir(no_weights)
    with pytest.raises(TypeError, match="nir.NIRGraph or a path"):
        from_nir(42)


def test_export_of_a_large_network_is_refused_with_a_clear_message():
    lif = LifReservoir(input_size=1, connection_prob=0.001, **{**PARAMS, "size": 12000})
    with pytest.raises(ValueError, match="use recurrent_csr"):
        to_nir(lif)
