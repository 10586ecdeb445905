"""The estimators with scikit-learn's own tools: its estimator checks, pickling, deep copies,
joblib workers, a Dask cluster, label types through model files, class probabilities."""

import copy
import pickle

import numpy as np
import pytest

import reservoir
from reservoir import ESNClassifier, ESNRegressor, SequenceScaler

sklearn = pytest.importorskip("sklearn")
from sklearn.model_selection import GridSearchCV, cross_validate  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

# The checks that do not apply, and why (docs/python.md lists them).
REGRESSOR_SKIPPED = {
    "check_methods_subset_invariance": "a series' rows depend on the rows before them",
    "check_methods_sample_order_invariance": "a series' rows depend on the rows before them",
}


def test_regressor_passes_scikit_learns_checks():
    failed = check_estimator(
        ESNRegressor(size=100, washout=0, device="cpu"),
        expected_failed_checks=REGRESSOR_SKIPPED,
        on_fail=None,
    )
    wrong = [
        (r["check_name"], str(r["exception"]))
        for r in failed
        if r["status"] == "failed"
        or (r["status"] == "xfail" and r["check_name"] not in REGRESSOR_SKIPPED)
    ]
    assert not wrong, wrong
    # The skipped checks do fail: the rows of a series are not independent samples.
    assert {r["check_name"] for r in failed if r["status"] == "xfail"} == set(REGRESSOR_SKIPPED)


def test_classifier_passes_scikit_learns_checks():
    results = check_estimator(ESNClassifier(size=100, device="cpu"), on_fail=None)
    wrong = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert not wrong, wrong


@pytest.mark.parametrize("fitted", [False, True])
def test_estimators_pickle_and_deep_copy(narma, labelled, fitted):
    u, y = narma
    X, labels = labelled
    for model, data, target in (
        (ESNRegressor(size=60, device="cpu"), u[:800], y[:800]),
        (ESNClassifier(size=60, device="cpu"), X, labels),
    ):
        if fitted:
            model.fit(data, target)
        for again in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
            assert again.get_params() == model.get_params()
            if fitted:
                assert np.array_equal(again.predict(data), model.predict(data))
            else:
                assert not hasattr(again, "model_")


def test_cross_validate_returns_fitted_estimators_from_two_processes(labelled):
    X, y = labelled
    done = cross_validate(
        ESNClassifier(size=60, device="cpu"), X, y, cv=3, n_jobs=2, return_estimator=True
    )
    assert len(done["estimator"]) == 3
    for fitted, score in zip(done["estimator"], done["test_score"]):
        assert fitted.classes_.tolist() == ["down", "up"]
        assert 0.0 <= score <= 1.0


def test_grid_search_on_a_dask_cluster(labelled):
    distributed = pytest.importorskip("distributed")
    import joblib

    X, y = labelled
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        with joblib.parallel_backend("dask"):
            search = GridSearchCV(
                ESNClassifier(size=60, device="cpu"), {"leak_rate": [0.2, 1.0]}, cv=2, n_jobs=-1
            ).fit(X, y)
    local = GridSearchCV(ESNClassifier(size=60, device="cpu"), {"leak_rate": [0.2, 1.0]}, cv=2).fit(
        X, y
    )
    # The workers fit the same models: the same scores to the bit.
    assert np.array_equal(
        search.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"]
    )
    assert np.array_equal(search.predict(X), local.predict(X))


@pytest.mark.parametrize(
    "labels",
    [
        np.array([0, 1, 2, 10] * 30),
        np.array([0, 1, 2, 10] * 30, dtype=np.int32),
        np.array([True, False] * 60),
        np.array([0.0, 1.0, 3.0] * 40),
        np.array(["b", "a", "c"] * 40),
    ],
    ids=["int64", "int32", "bool", "float", "str"],
)
def test_labels_keep_their_dtype_through_save_and_load(tmp_path, labelled, labels):
    X, _ = labelled
    model = ESNClassifier(size=60, device="cpu").fit(X, labels)
    reservoir.save(model, tmp_path / "c.bin")
    loaded = reservoir.load(tmp_path / "c.bin")
    assert loaded.classes_.dtype == labels.dtype
    assert np.array_equal(loaded.classes_, model.classes_)
    assert loaded.predict(X).dtype == labels.dtype
    assert np.array_equal(loaded.predict(X), model.predict(X))
    assert loaded.score(X, labels) == model.score(X, labels)


def test_probabilities_and_decision_function(labelled):
    X, y = labelled
    three = np.array(["low", "mid", "high"])[np.arange(len(X)) % 3]
    model = ESNClassifier(size=60, device="cpu").fit(X, three)
    proba = model.predict_proba(X)
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba))
    assert model.decision_function(X).shape == (len(X), 3)
    binary = ESNClassifier(size=60, device="cpu").fit(X, y)
    decision = binary.decision_function(X)
    assert decision.shape == (len(X),)
    assert np.array_equal(binary.classes_[(decision > 0).astype(int)], binary.predict(X))


def test_a_table_is_sequences_of_one_step(labelled):
    rng = np.random.default_rng(3)
    table = rng.normal(size=(200, 4))
    labels = (table[:, 0] + table[:, 1] > 0).astype(int)
    model = ESNClassifier(size=100, leak_rate=1.0, device="cpu").fit(table, labels)
    assert model.n_features_in_ == 4
    assert np.array_equal(model.predict(table), model.predict(table[:, None, :]))
    assert model.score(table, labels) > 0.9


def test_sequence_scaler_in_a_pipeline(labelled):
    X, y = labelled
    shifted = [100.0 + 50.0 * x for x in X]
    scaler = SequenceScaler().fit(shifted)
    rows = np.concatenate(scaler.transform(shifted))
    np.testing.assert_allclose(rows.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(rows.std(axis=0), 1.0)
    back = scaler.inverse_transform(scaler.transform(shifted))
    np.testing.assert_allclose(np.concatenate(back), np.concatenate(shifted))
    batch = np.stack([x[:20] for x in shifted])
    assert scaler.transform(batch).shape == batch.shape
    pipe = make_pipeline(SequenceScaler(), ESNClassifier(size=60, device="cpu"))
    pipe.fit(shifted[:90], y[:90])
    plain = ESNClassifier(size=60, device="cpu").fit(shifted[:90], y[:90])
    assert pipe.score(shifted[90:], y[90:]) > plain.score(shifted[90:], y[90:])
    assert pipe.score(shifted[90:], y[90:]) > 0.8
