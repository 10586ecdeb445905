"""Spike agreement with Norse and snnTorch through NIR, checked against spike trains those
tools recorded (benches/python/nir_interop.py --fixtures python/tests/fixtures/nir), so
without torch: our export as Norse runs it, and snnTorch's export as Norse and snnTorch run
it, each imported here."""

import pathlib

import numpy as np
import pytest

nir = pytest.importorskip("nir", reason="the nir package is not installed (pip install nir)")

from reservoir.nir import DrivenLifReservoir, from_nir  # noqa: E402

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "nir"
AGREE_STEPS = 500


def spikes(graph, inputs, **params):
    """Our spike trains for a graph: counts over a window of one step."""
    lif = from_nir(graph, device="cpu", features="counts", count_window_steps=1, **params)
    return lif, lif.run(inputs) > 0


def first_difference(a, b):
    differ = np.nonzero((a != b).any(axis=1))[0]
    return int(differ[0]) if differ.size else len(a)


def test_our_euler_export_fires_norses_spikes():
    graph = nir.read(FIXTURES / "ours.nir")
    recorded = np.load(FIXTURES / "ours_spikes.npz")
    lif, ours = spikes(graph, recorded["inputs"])
    assert lif.params["integration"] == "euler" and lif.size == 100
    assert recorded["norse"].sum() > 200, "the recorded network is too quiet to prove anything"
    assert first_difference(ours, recorded["norse"]) >= AGREE_STEPS
    # snnTorch's neurons, wired as the graph says, agree too.
    assert first_difference(ours, recorded["snntorch_corrected"]) >= AGREE_STEPS


def test_snntorchs_export_runs_here_as_in_norse_and_snntorch():
    graph = nir.read(FIXTURES / "snntorch.nir")
    recorded = np.load(FIXTURES / "snntorch_spikes.npz")
    lif, ours = spikes(graph, recorded["inputs"], dt_ms=0.1)
    # snnTorch's layers carry biases: a constant drive of the synapses.
    assert isinstance(lif, DrivenLifReservoir)
    assert recorded["norse"].sum() > 200, "the recorded network is too quiet to prove anything"
    assert first_difference(ours, recorded["norse"]) >= AGREE_STEPS
    assert first_difference(ours, recorded["snntorch_native"]) >= AGREE_STEPS
