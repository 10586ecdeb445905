"""Bad arguments raise ValueError or TypeError with the command line's message; nothing
aborts the interpreter."""

import numpy as np
import pytest

import reservoir
from reservoir import ESNClassifier, ESNRegressor


def test_rule_errors_are_the_command_lines(narma):
    u, y = narma
    with pytest.raises(
        ValueError,
        match=r"^invalid value for `reservoir.leak_rate`: must be in \(0, 1\] \(got 1.5\)$",
    ):
        ESNRegressor(leak_rate=1.5).fit(u, y)
    with pytest.raises(ValueError, match=r"reservoir.spectral_radius"):
        ESNRegressor(spectral_radius=1e300).fit(u, y)
    with pytest.raises(ValueError, match=r"readout.ridge"):
        ESNRegressor(ridge=-1.0).fit(u, y)
    with pytest.raises(ValueError, match="unknown device `gpu`"):
        ESNRegressor(device="gpu", size=10).fit(u, y)


def test_wrong_types_are_type_errors(narma):
    u, y = narma
    with pytest.raises(TypeError, match="size: expected an integer, got str"):
        ESNRegressor(size="big").fit(u, y)
    with pytest.raises(TypeError, match="leak_rate: expected a number"):
        ESNRegressor(leak_rate=None).fit(u, y)
    # Text where numbers belong: scikit-learn's ValueError for a table, else a TypeError.
    with pytest.raises(ValueError, match="could not convert string to float"):
        ESNRegressor(size=10).fit(np.array([["a"]] * 200), y[:200])
    with pytest.raises(TypeError, match="expected float32 or float64"):
        ESNRegressor(size=10).fit([np.array([["a"]] * 200)], [y[:200]])


def test_unknown_names_are_errors():
    with pytest.raises(ValueError, match="unknown variant `relu`"):
        ESNRegressor(activation="relu", size=10).fit(np.zeros((200, 1)), np.zeros(200))
    with pytest.raises(ValueError, match="`reservoir.activation`: unknown variant"):
        ESNRegressor(activation="relu", size=10).fit(np.zeros((200, 1)), np.zeros(200))
    with pytest.raises(TypeError, match="unknown parameter"):
        reservoir.EchoStateNetwork(sise=10)


def test_shapes_are_checked(narma):
    u, y = narma
    with pytest.raises(ValueError, match="2D array|2-D array"):
        ESNRegressor(size=10).fit(u[:, 0], y)
    with pytest.raises(ValueError, match="expected 3000 rows"):
        ESNRegressor(size=10).fit(u, y[:10])
    with pytest.raises(ValueError, match="washout"):
        ESNRegressor(size=10, washout=100).fit(u[:50], y[:50])
    model = ESNRegressor(size=10, device="cpu").fit(u, y)
    with pytest.raises(ValueError, match="X has 2 features, but ESNRegressor is expecting 1"):
        model.predict(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="no sequences"):
        model.predict([])


def test_rows_are_counted_as_the_user_counts_them(narma):
    u, y = narma
    bad = y.copy()
    bad[300, 0] = np.nan
    with pytest.raises(ValueError, match="row 300, column 0 is NaN"):
        ESNRegressor(size=10, washout=100, device="cpu").fit(u, bad)
    batch = [u[:500], u[500:1000]]
    targets = [y[:500], bad[200:700]]
    with pytest.raises(ValueError, match="series `1` targets row 100, column 0 is NaN"):
        ESNRegressor(size=10, washout=50, device="cpu").fit(batch, targets)


def test_non_finite_inputs_are_refused(narma):
    u, y = narma
    bad = u.copy()
    bad[17, 0] = np.nan
    with pytest.raises(ValueError, match="not finite|NaN"):
        ESNRegressor(size=10, device="cpu").fit(bad, y)
    model = ESNRegressor(size=10, device="cpu").fit(u, y)
    huge = u[:50].copy()
    huge[3, 0] = 1e39
    with pytest.raises(ValueError, match="3.4"):
        model.predict(huge)


def test_classifier_input_errors(labelled):
    X, y = labelled
    with pytest.raises(ValueError, match="one label per sequence"):
        ESNClassifier(size=10).fit(X, y[:5])
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        ESNClassifier(size=10).fit(X, np.linspace(0.0, 1.0, len(X)))
    with pytest.raises(ValueError, match="one class"):
        ESNClassifier(size=10).fit(X, ["a"] * len(X))
    with pytest.raises(ValueError, match="`features.summaries\\[0\\]`: unknown variant `median`"):
        ESNClassifier(size=10, features="median", device="cpu").fit(X, y)


def test_devices_are_checked_and_leave_a_cpu_job_on_the_cpu(labelled):
    X, y = labelled
    with pytest.raises(ValueError, match='devices: expected "all" or a list of GPU'):
        ESNClassifier(size=10, device="cpu", devices="some").fit(X, y)
    model = ESNClassifier(size=10, device="cpu", devices="all").fit(X, y)
    assert model.device_ == "cpu"
    assert model.get_params()["devices"] == "all"


def test_gpu_matmul_is_checked_and_leaves_a_cpu_job_alone(labelled):
    X, y = labelled
    with pytest.raises(ValueError, match="gpu_matmul"):
        ESNClassifier(size=10, activation="identity", gpu_matmul="f16", device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="bf16"):
        ESNClassifier(size=10, gpu_matmul="bf16", device="cpu").fit(X, y)
    plain = ESNClassifier(size=10, device="cpu").fit(X, y)
    f16 = ESNClassifier(size=10, device="cpu", gpu_matmul="f16").fit(X, y)
    assert f16.get_params()["gpu_matmul"] == "f16"
    assert np.array_equal(plain.predict(X), f16.predict(X))


def test_cuda_on_a_machine_without_one_is_a_gpu_error():
    try:
        reservoir.EchoStateNetwork(size=10, device="cuda")
    except reservoir.GpuError as error:
        assert "GPU" in str(error) or "cuda" in str(error)
    # With a GPU the reservoir is built; either way nothing aborted.


def test_memory_too_large_is_a_memory_error():
    with pytest.raises(MemoryError, match="not enough memory"):
        reservoir.EchoStateNetwork(size=16_000_000, connection_prob=1.0, device="cpu")
