"""Forecasting that continues the training series: from the fitted state, in closed loop, and
through model files in both directions with the command line."""

import subprocess

import numpy as np
import pytest
from test_files import fit_in_cli, read_column, write_csv

import reservoir
from reservoir import ESNRegressor

PARAMS = dict(size=200, leak_rate=0.5, spectral_radius=0.9, seed=2, ridge=1e-8, device="cpu")


@pytest.fixture(scope="module")
def mackey_glass():
    """Mackey–Glass, 3000 steps (T x 1): inputs x(t), one-step-ahead targets x(t + 1)."""
    series = reservoir.tasks.mackey_glass(3001, seed=1).reshape(-1, 1)
    return series[:-1], series[1:]


def r2(truth, guess):
    return 1.0 - ((truth - guess) ** 2).sum() / ((truth - truth.mean()) ** 2).sum()


def test_continuing_the_training_state_has_no_transient(mackey_glass):
    u, y = mackey_glass
    model = ESNRegressor(**PARAMS).fit(u[:2000], y[:2000])
    cold = model.predict(u[2000:2100])
    warm = model.predict(u[2000:2100], continue_state=True)
    assert r2(y[2000:2100], warm) > 0.999
    assert r2(y[2000:2100], warm) > r2(y[2000:2100], cold)
    # Continuing is running the whole series from zero and keeping the test rows.
    whole = model.predict(u[:2100])
    np.testing.assert_allclose(warm, whole[2000:], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="one series"):
        model.predict([u[:10], u[10:20]], continue_state=True)


def test_score_is_r2_score_on_the_rows_after_the_washout(mackey_glass, narma):
    from sklearn.metrics import r2_score

    u, y = narma
    model = ESNRegressor(**PARAMS, washout=50).fit(u[:1500], y[:1500])
    predicted = model.predict(u[1500:2000])
    assert model.score(u[1500:2000], y[1500:2000]) == pytest.approx(
        r2_score(y[1550:2000], predicted[50:]), rel=1e-12
    )
    u, y = mackey_glass
    model = ESNRegressor(**PARAMS, washout=50).fit(u[:2000], y[:2000])
    warm = model.predict(u[2000:2300], continue_state=True)
    assert model.score(u[2000:2300], y[2000:2300], continue_state=True) == pytest.approx(
        r2_score(y[2050:2300], warm[50:]), rel=1e-12
    )


def test_closed_loop_generation_follows_the_series(mackey_glass):
    u, y = mackey_glass
    model = ESNRegressor(**PARAMS, washout=100).fit(u[:2000], y[:2000])
    forecast = model.generate(50)
    assert forecast.shape == (50, 1)
    # The first value is the readout's at the training end state: predict's last row.
    assert forecast[0, 0] == model.predict(u[:2000])[-1, 0]
    # It follows the series closely for 20 steps, then drifts (one-step training only).
    assert np.abs(forecast[:20, 0] - u[2000:2020, 0]).max() < 0.05 * u[:2000, 0].std()
    # With context rows, the values follow them.
    after = model.generate(20, u[2000:2100])
    assert after[0, 0] == model.predict(u[2000:2100], continue_state=True)[-1, 0]
    assert np.abs(after[:, 0] - u[2100:2120, 0]).max() < 0.05 * u[:2000, 0].std()
    with pytest.raises(MemoryError, match="closed-loop outputs"):
        model.generate(10**15)
    narrow = ESNRegressor(size=20, device="cpu").fit(np.hstack([u, u])[:500], y[:500])
    with pytest.raises(ValueError, match="closed-loop"):
        narrow.generate(5)


def test_pickled_regressor_continues_from_the_same_state(mackey_glass):
    import pickle

    u, y = mackey_glass
    model = ESNRegressor(**PARAMS).fit(u[:1000], y[:1000])
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.model_.state, model.model_.state)
    assert np.array_equal(again.generate(10), model.generate(10))


def predict_in_cli(cli, model, inputs, output, *extra):
    subprocess.run(
        [
            cli,
            "predict",
            "--model",
            str(model),
            "--input",
            str(inputs),
            "--output",
            str(output),
            "--device",
            "cpu",
            *extra,
        ],
        check=True,
        capture_output=True,
    )
    return read_column(output)


def test_a_python_model_continues_in_the_command_line(tmp_path, mackey_glass, cli):
    u, y = mackey_glass
    model = ESNRegressor(**PARAMS).fit(u[:2000], y[:2000])
    reservoir.save(model, tmp_path / "m.bin")
    write_csv(tmp_path / "in.csv", ["x0"], u[2000:2200])
    continued = predict_in_cli(cli, tmp_path / "m.bin", tmp_path / "in.csv", tmp_path / "o.csv")
    np.testing.assert_array_equal(continued, model.predict(u[2000:2200], continue_state=True))


def test_a_command_line_model_continues_in_python(tmp_path, mackey_glass, cli):
    u, y = mackey_glass
    write_csv(tmp_path / "train.csv", ["u", "y"], np.hstack([u[:2000], y[:2000]]))
    write_csv(tmp_path / "in.csv", ["u"], u[2000:2200])
    fit_in_cli(cli, tmp_path, "[reservoir]\nsize = 200\nleak_rate = 0.5\nseed = 2\n")
    continued = predict_in_cli(cli, tmp_path / "m.bin", tmp_path / "in.csv", tmp_path / "o.csv")
    loaded = reservoir.load(tmp_path / "m.bin")
    np.testing.assert_array_equal(loaded.predict(u[2000:2200], continue_state=True), continued)
    assert r2(y[2000:2100], continued[:100]) > 0.99
