"""The GPU path, where a GPU is present: skipped with the reason otherwise, and failing
instead when RESERVOIR_REQUIRE_GPU=1."""

import os

import numpy as np
import pytest

import reservoir
from reservoir import ESNClassifier, ESNRegressor


@pytest.fixture(scope="module")
def gpu():
    try:
        esn = reservoir.EchoStateNetwork(size=10, device="cuda")
    except reservoir.GpuError as error:
        if os.environ.get("RESERVOIR_REQUIRE_GPU") == "1":
            pytest.fail(f"RESERVOIR_REQUIRE_GPU=1 but no GPU: {error}")
        pytest.skip(f"no usable GPU: {error}")
    return esn.device


def test_gpu_regressor_agrees_with_the_cpu(gpu, narma):
    u, y = narma
    params = dict(size=300, leak_rate=1.0, spectral_radius=0.9, seed=5)
    cpu = ESNRegressor(**params, device="cpu").fit(u[:2000], y[:2000])
    cuda = ESNRegressor(**params, device="cuda").fit(u[:2000], y[:2000])
    assert cuda.device_ == gpu
    np.testing.assert_allclose(cuda.predict(u[2000:]), cpu.predict(u[2000:]), rtol=1e-4, atol=1e-4)


def test_gpu_classifier_agrees_with_the_cpu(gpu, labelled):
    X, y = labelled
    cpu = ESNClassifier(size=100, device="cpu").fit(X, y)
    cuda = ESNClassifier(size=100, device="cuda").fit(X, y)
    assert cuda.device_ == gpu
    assert np.mean(cuda.predict(X) == cpu.predict(X)) > 0.95


def test_gpu_reservoir_states_agree_with_the_cpu(gpu, narma):
    u, _ = narma
    cpu = reservoir.EchoStateNetwork(size=200, seed=9, device="cpu").run(u[:500])
    cuda = reservoir.EchoStateNetwork(size=200, seed=9, device="cuda").run(u[:500])
    np.testing.assert_allclose(cuda, cpu, rtol=1e-4, atol=1e-5)


def test_gpu_classifier_over_every_gpu_agrees_with_one(gpu, labelled):
    # `devices="all"` spreads the sequences over every GPU (one where there is one) and adds
    # their readout sums in f64: the fit is one GPU's to rounding.
    X, y = labelled
    one = ESNClassifier(size=100, device="cuda").fit(X, y)
    try:
        every = ESNClassifier(size=100, device="cuda", devices="all").fit(X, y)
    except reservoir.GpuError as error:
        # Several GPUs need NCCL; its absence skips, as the Rust tests over GPUs do.
        if "NCCL" not in str(error) or os.environ.get("RESERVOIR_REQUIRE_GPU") == "1":
            raise
        pytest.skip(f"several GPUs but no NCCL: {error}")
    assert every.device_.startswith("cuda"), every.device_
    assert np.mean(every.predict(X) == one.predict(X)) > 0.99
