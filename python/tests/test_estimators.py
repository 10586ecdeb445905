"""The estimators under scikit-learn's conventions, every input layout and dtype, seeds."""

import pickle

import numpy as np
import pytest

import reservoir
from reservoir import ESNClassifier, ESNRegressor

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402

SMALL = dict(size=200, leak_rate=1.0, spectral_radius=0.9, seed=3, device="cpu")


def test_regressor_learns_narma(narma):
    u, y = narma
    model = ESNRegressor(**SMALL).fit(u[:2000], y[:2000])
    assert model.score(u[2000:], y[2000:]) > 0.8
    assert model.predict(u[2000:]).shape == (1000, 1)
    assert model.device_ == "cpu"
    assert model.n_features_in_ == 1


def test_one_dimensional_targets_give_one_dimensional_predictions(narma):
    u, y = narma
    model = ESNRegressor(**SMALL).fit(u[:1000], y[:1000, 0])
    assert model.predict(u[1000:1500]).shape == (500,)


def test_layouts_give_the_same_predictions(narma):
    u, y = narma
    batch_u = u[:2400].reshape(4, 600, 1)
    batch_y = y[:2400].reshape(4, 600, 1)
    from_batch = ESNRegressor(**SMALL, washout=50).fit(batch_u, batch_y)
    from_list = ESNRegressor(**SMALL, washout=50).fit(list(batch_u), list(batch_y))
    assert np.array_equal(from_batch.predict(batch_u), np.stack(from_list.predict(list(batch_u))))
    # Ragged sequences: each prediction as long as its sequence.
    ragged = [u[:300], u[300:750], u[750:800]]
    lengths = [p.shape[0] for p in from_list.predict(ragged)]
    assert lengths == [300, 450, 50]


def test_dtypes_and_memory_orders_give_the_same_numbers(narma):
    u, y = narma
    K = np.hstack([u, np.sin(np.arange(len(u)))[:, None]])
    reference = ESNRegressor(**SMALL).fit(K[:1500], y[:1500]).predict(K[1500:2000])
    for variant in (np.asfortranarray(K), K[::-1][::-1], K.astype(np.float32).astype(np.float64)):
        got = ESNRegressor(**SMALL).fit(variant[:1500], y[:1500]).predict(variant[1500:2000])
        assert np.array_equal(got, reference)
    as32 = ESNRegressor(**SMALL).fit(K.astype(np.float32)[:1500], y[:1500])
    assert as32.predict(K.astype(np.float32)[1500:2000]).dtype == np.float64


def test_same_seed_same_model_other_seed_other_model(narma):
    u, y = narma
    a = ESNRegressor(**SMALL).fit(u[:1000], y[:1000]).model_.readout_weights
    b = ESNRegressor(**SMALL).fit(u[:1000], y[:1000]).model_.readout_weights
    c = ESNRegressor(**{**SMALL, "seed": 4}).fit(u[:1000], y[:1000]).model_.readout_weights
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_classifier_on_ragged_sequences(labelled):
    X, y = labelled
    model = ESNClassifier(size=100, seed=1, device="cpu").fit(X[:90], y[:90])
    assert model.score(X[90:], y[90:]) > 0.8
    assert list(model.classes_) == ["down", "up"]
    assert model.decision_function(X[90:]).shape == (30,)  # two classes: one score
    assert set(model.predict(X[90:])) <= {"down", "up"}


def test_classifier_representations(labelled):
    X, y = labelled
    model = ESNClassifier(
        size=60,
        seed=1,
        device="cpu",
        features=["model_space", "last"],
        bidirectional=True,
        components=5,
        model_ridge=0.5,
        warmup=2,
    ).fit(X[:90], y[:90])
    assert model.score(X[90:], y[90:]) > 0.8
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.decision_function(X[90:]), model.decision_function(X[90:]))
    with pytest.raises(TypeError, match="bidirectional"):
        ESNClassifier(bidirectional="yes", device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="components"):
        ESNClassifier(size=10, components=21, bidirectional=True, device="cpu").fit(X, y)


@pytest.mark.parametrize(
    "model",
    [
        dict(kind="deep_echo_state", layers=[dict(size=60), dict(size=40, leak_rate=0.5)]),
        dict(kind="nvar", nvar=dict(delay=10, order=2)),
        dict(input_to_readout=True, plasticity=dict(learning_rate=1e-3)),
        dict(feedback=0.2),
        dict(kind="nvar", nvar=dict(delay=10, order=2), feedback=0.1),
    ],
)
def test_every_model_kind_fits_pickles_and_loads(narma, tmp_path, model):
    u, y = narma
    fitted = ESNRegressor(**SMALL, **model).fit(u[:1000], y[:1000])
    assert fitted.score(u[1000:1500], y[1000:1500]) > 0.5
    again = pickle.loads(pickle.dumps(fitted))
    assert np.array_equal(again.predict(u[1000:1200]), fitted.predict(u[1000:1200]))
    reservoir.save(fitted, tmp_path / "model.bin")
    loaded = reservoir.load(tmp_path / "model.bin")
    assert loaded.get_params()["kind"] == fitted.kind
    assert loaded.get_params()["feedback"] == fitted.feedback
    assert np.array_equal(loaded.predict(u[1000:1200]), fitted.predict(u[1000:1200]))
    continued = fitted.predict(u[1000:1200], continue_state=True)
    assert np.array_equal(loaded.predict(u[1000:1200], continue_state=True), continued)


def test_increments_forecast_a_series_in_closed_loop(tmp_path):
    t = np.arange(1201) * 0.05
    x = np.stack([np.sin(t), np.cos(1.3 * t)], axis=1)
    model = ESNRegressor(
        kind="nvar",
        nvar=dict(delay=2, order=2),
        increments=True,
        ridge=1e-8,
        washout=10,
        device="cpu",
    ).fit(x[:1000], x[1:1001])
    generated = model.generate(50)
    # The first value follows the last input row, x[999].
    assert np.abs(generated - x[1000:1050]).max() < 1e-3
    reservoir.save(model, tmp_path / "model.bin")
    loaded = reservoir.load(tmp_path / "model.bin")
    assert loaded.increments
    assert np.array_equal(loaded.generate(50), generated)
    with pytest.raises(ValueError, match="model.increments"):
        ESNRegressor(kind="nvar", increments=True, device="cpu").fit(x[:100], x[1:101, :1])


def test_model_parameters_are_checked(narma):
    u, y = narma
    with pytest.raises(ValueError, match="model.layers"):
        ESNRegressor(**SMALL, kind="deep_echo_state").fit(u[:300], y[:300])
    with pytest.raises(ValueError, match="model.plasticity"):
        ESNRegressor(**SMALL, kind="nvar", plasticity=dict()).fit(u[:300], y[:300])
    with pytest.raises(TypeError, match="input_to_readout"):
        ESNRegressor(**SMALL, input_to_readout=1).fit(u[:300], y[:300])
    with pytest.raises(ValueError, match="model.feedback"):
        ESNRegressor(**SMALL, feedback=0.0).fit(u[:300], y[:300])
    with pytest.raises(TypeError, match="feedback"):
        ESNRegressor(**SMALL, feedback="yes").fit(u[:300], y[:300])


def test_classifier_keeps_label_types(labelled):
    X, y = labelled
    numeric = np.where(y == "up", 1, 0)
    model = ESNClassifier(size=100, device="cpu").fit(X, numeric)
    assert model.predict(X).dtype == numeric.dtype
    assert set(model.predict(X)) <= {0, 1}


def test_grid_search_and_cross_validation(labelled):
    X, y = labelled
    search = GridSearchCV(
        ESNClassifier(size=80, device="cpu"),
        {"leak_rate": [0.2, 1.0], "features": ["last", ["last", "mean"]]},
        cv=3,
    ).fit(X, y)
    assert search.best_score_ > 0.7
    assert set(search.best_params_) == {"leak_rate", "features"}
    scores = cross_val_score(ESNClassifier(size=80, device="cpu"), X, y, cv=3)
    assert scores.shape == (3,)


def test_grid_search_on_a_batch_of_series(narma):
    u, y = narma
    X, Y = u[:2400].reshape(8, 300, 1), y[:2400].reshape(8, 300)
    search = GridSearchCV(ESNRegressor(**SMALL, washout=50), {"ridge": [1e-8, 1e-2]}, cv=2)
    search.fit(X, Y)
    assert search.best_params_["ridge"] in (1e-8, 1e-2)


def test_clone_and_params_round_trip():
    model = ESNRegressor(size=123, ridge=1e-3)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    copy.set_params(size=7)
    assert copy.size == 7 and model.size == 123


def test_pipeline(narma):
    u, y = narma
    pipe = Pipeline(
        [("scale", FunctionTransformer(lambda x: 2 * x)), ("esn", ESNRegressor(**SMALL))]
    )
    pipe.fit(u[:1500], y[:1500])
    assert pipe.predict(u[1500:1600]).shape == (100, 1)


def test_unfitted_estimator_says_so(narma):
    u, _ = narma
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted"):
        ESNRegressor().predict(u)


def test_echo_state_network_keeps_its_state(narma):
    u, _ = narma
    esn = reservoir.EchoStateNetwork(input_size=1, size=50, seed=2, device="cpu")
    whole = esn.run(u[:200])
    esn.reset()
    first, second = esn.run(u[:100]), esn.run(u[100:200])
    assert np.array_equal(np.vstack([first, second]), whole)
    assert np.array_equal(esn.state(), whole[-1])
    esn.set_state(np.zeros(50))
    assert np.array_equal(esn.run(u[:100]), first)
    # Many sequences step together in blocks, whose sparse products may sum in another
    # order than one run's on some CPUs: equal to f32 rounding.
    many = esn.run_many([u[:100], u[:30]])
    np.testing.assert_allclose(many[0], first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(many[1], first[:30], rtol=1e-5, atol=1e-6)
    assert esn.size == 50 and esn.input_size == 1 and esn.device == "cpu"


def test_readouts(narma):
    u, y = narma
    esn = reservoir.EchoStateNetwork(input_size=1, size=100, leak_rate=1.0, seed=2, device="cpu")
    states = esn.run(u[:2000])
    readout = reservoir.Readout.ridge(states[100:], y[100:2000], ridge=1e-6)
    assert readout.weights.shape == (100, 1) and readout.intercept.shape == (1,)
    assert readout.predict(states).shape == (2000, 1)
    rls = reservoir.Rls(100, 1, forgetting=1.0, delta=1.0)
    for t in range(100, 600):
        rls.update(states[t], y[t])
    assert rls.predict(states[700]).shape == (1,)
    assert rls.readout().weights.shape == (100, 1)


def test_tasks_are_seeded():
    a, b = reservoir.tasks.narma10(500, seed=5), reservoir.tasks.narma10(500, seed=5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert reservoir.tasks.mackey_glass(300).shape == (300,)
    assert reservoir.tasks.lorenz(200).shape == (200, 3)
    u, targets = reservoir.tasks.memory_capacity(max_delay=10, train=100, test=50, washout=10)
    assert u.shape == (160, 1) and targets.shape == (160, 10)


def test_sweep_ranks_lanes(labelled):
    X, y = labelled
    report = reservoir.sweep(
        ESNClassifier(size=60, device="cpu"),
        X,
        y,
        leak_rate=[0.2, 1.0],
        ridge=[1e-6, 1e-2],
        folds=3,
    )
    assert report["score"] == "validation_accuracy"
    assert len(report["results"]) == 4
    scores = [r["score"] for r in report["results"]]
    assert scores == sorted(scores, reverse=True)
    assert {"spectral_radius", "leak_rate", "input_scaling", "ridge", "score"} <= set(
        report["results"][0]
    )


def test_sweep_as_a_data_frame(narma):
    pandas = pytest.importorskip("pandas")
    u, y = narma
    report = reservoir.sweep(
        ESNRegressor(**SMALL, washout=20),
        u[:2000].reshape(10, 200, 1),
        y[:2000].reshape(10, 200),
        spectral_radius=[0.5, 0.9],
        as_frame=True,
    )
    assert isinstance(report["results"], pandas.DataFrame)
    assert report["score"] == "validation_nrmse"
