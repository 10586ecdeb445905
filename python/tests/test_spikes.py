"""Spike encoders, the template detector and the LIF reservoir from Python."""

import numpy as np
import pytest

from reservoir.spikes import (
    LifReservoir,
    PatternDetector,
    encode_delta,
    encode_latency,
    encode_poisson,
    encode_population,
    encode_rate,
    plant_patterns,
    random_template,
)

SMALL = dict(size=80, dt_ms=1.0, device="cpu", seed=3)


@pytest.fixture(scope="module")
def signal():
    """200 steps of 3 channels in [0, 1]."""
    t = np.arange(200)[:, None]
    return 0.5 + 0.5 * np.sin(t * np.array([0.05, 0.11, 0.23]))


# Encoders


def test_rate_shapes_values_and_seeds(signal):
    spikes = encode_rate(signal, steps=2, seed=1)
    assert spikes.shape == (400, 3) and spikes.dtype == np.float64
    assert set(np.unique(spikes)) <= {0.0, 1.0}
    np.testing.assert_array_equal(spikes, encode_rate(signal, steps=2, seed=1))
    assert not np.array_equal(spikes, encode_rate(signal, steps=2, seed=2))
    # One static input (1-D) held for 50 steps; probability 1 and 0 at the ends.
    static = encode_rate(np.array([1.0, 0.0, 0.5]), steps=50, seed=0)
    assert static.shape == (50, 3)
    assert static[:, 0].all() and not static[:, 1].any() and 5 < static[:, 2].sum() < 45


def test_float32_and_float64_give_the_same_spikes(signal):
    for encode in (encode_rate, encode_latency, encode_delta, encode_population):
        single = signal.astype(np.float32)
        np.testing.assert_array_equal(encode(single), encode(single.astype(np.float64)))


def test_latency_one_spike_per_feature_and_row():
    x = np.array([[1.0, 0.5, 0.02], [0.1, 0.9, 0.4]])
    spikes = encode_latency(x, steps=10, linear=True, normalize=True)
    assert spikes.shape == (20, 3)
    for row in (spikes[:10], spikes[10:]):
        np.testing.assert_array_equal(row.sum(axis=0), [1, 1, 1])
    first = spikes[:10].argmax(axis=0)
    assert first[0] < first[1] < first[2]  # stronger inputs spike earlier


def test_delta_marks_rises_and_falls():
    x = np.array([[0.0], [0.5], [0.55], [0.2]])
    np.testing.assert_array_equal(encode_delta(x, threshold=0.1)[:, 0], [0, 1, 0, 0])
    np.testing.assert_array_equal(
        encode_delta(x, threshold=0.1, off_spike=True)[:, 0], [0, 1, 0, -1]
    )


def test_population_fields_and_nearest_centre():
    spikes = encode_population(np.array([[0.5, 0.0]]), neurons_per_feature=5, steps=20)
    assert spikes.shape == (20, 10)
    assert spikes[:, 2].all()  # feature 0 at the centre 0.5 of its field 2: p = 1
    assert spikes[:, 5].all()  # feature 1 at the centre 0.0 of its field 0
    assert spikes[:, 4].sum() < spikes[:, 3].sum() < 20


def test_poisson_counts(signal):
    counts = encode_poisson(signal, max_rate_hz=200.0, dt_ms=1.0, steps=5, seed=4)
    assert counts.shape == (1000, 3) and (counts >= 0).all()
    assert 0.3 * 200 < counts.sum() / 3 < 0.7 * 200  # about 0.1 spikes per bin per channel
    with pytest.raises(ValueError, match=r"must be >= 0 \(a rate\)"):
        encode_poisson(-signal)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: encode_rate(x, steps=0), "steps"),
        (lambda x: encode_latency(x, threshold=1.5), "threshold"),
        (lambda x: encode_delta(x, threshold=-1.0), "threshold"),
        (lambda x: encode_population(x, min=1.0, max=0.0), "max"),
        (lambda x: encode_rate(x, steps=-1), "steps: must be >= 0"),
        (lambda x: encode_rate(np.full((2, 2), np.nan)), "not finite"),
        (lambda x: encode_rate(np.zeros((2, 2, 2))), "expected a 1-D array"),
    ],
)
def test_encoder_errors_are_value_errors(signal, call, message):
    with pytest.raises(ValueError, match=message):
        call(signal)


def test_encoder_type_errors(signal):
    with pytest.raises(TypeError, match="steps: expected an integer"):
        encode_rate(signal, steps=1.5)
    with pytest.raises(TypeError, match="expected float32 or float64"):
        encode_rate(np.array([["a"]]))
    with pytest.raises(TypeError, match="normalize: expected a bool"):
        encode_latency(signal, normalize="yes")


# Detector


def test_detector_finds_planted_templates():
    templates = [random_template(20, 30.0, 20, seed=s) for s in (1, 2)]
    assert templates[0].shape == (30, 20)
    stream, onsets, which = plant_patterns(
        templates, 20, 1000.0, background_hz=5.0, occurrences=3, seed=9
    )
    assert stream.shape == (1000, 20) and len(onsets) == 6 and sorted(which) == [0, 0, 0, 1, 1, 1]
    detector = PatternDetector(templates, threshold=0.5)
    assert (detector.n_channels, detector.n_templates) == (20, 2)
    found = detector.detect(stream)
    assert set(found) == {"time_ms", "template", "score"}
    ends = onsets + 30.0
    for end, template in zip(ends, which):
        hit = (found["template"] == template) & (np.abs(found["time_ms"] - end) <= 2.0)
        assert hit.any(), (end, template, found)
    scores = detector.scores(stream)
    assert scores.shape == (1000, 2) and (scores >= 0).all() and (scores <= 1).all()


def test_detector_errors():
    template = random_template(4, 10.0, 4, seed=1)
    with pytest.raises(ValueError, match="detector.threshold"):
        PatternDetector([template], threshold=2.0)
    with pytest.raises(ValueError, match="no spikes"):
        PatternDetector([np.zeros((10, 4))])
    with pytest.raises(ValueError, match="channel count"):
        PatternDetector([template]).detect(np.zeros((50, 3)))


# LIF reservoir


@pytest.fixture(scope="module")
def spikes_in(signal):
    return encode_rate(signal, seed=5)


def test_lif_runs_deterministically_on_the_cpu(spikes_in):
    a = LifReservoir(input_size=3, input_mode="synaptic", **SMALL)
    b = LifReservoir(input_size=3, input_mode="synaptic", **SMALL)
    assert a.device == "cpu" and (a.size, a.input_size) == (80, 3)
    features = a.run(spikes_in)
    assert features.shape == (200, 80) and features.dtype == np.float64
    assert features.any(), "no neuron spiked"
    np.testing.assert_array_equal(features, b.run(spikes_in))
    np.testing.assert_array_equal(a.state(), features[-1])
    a.reset()
    np.testing.assert_array_equal(a.run(spikes_in), features)
    other = LifReservoir(input_size=3, input_mode="synaptic", **{**SMALL, "seed": 4})
    assert not np.array_equal(other.run(spikes_in), features)


def test_lif_run_many_runs_each_from_rest(spikes_in):
    lif = LifReservoir(input_size=3, input_mode="synaptic", **SMALL)
    parts = [spikes_in[:120], spikes_in[120:]]
    many = lif.run_many(parts)
    for part, got in zip(parts, many):
        lif.reset()
        np.testing.assert_array_equal(got, lif.run(part))
    batch = lif.run_many(np.stack([spikes_in[:100], spikes_in[100:]]))
    assert batch.shape == (2, 100, 80)


def test_lif_features_and_params(spikes_in):
    for features in ("trace", "membrane", "counts"):
        lif = LifReservoir(input_size=3, features=features, input_mode="synaptic", **SMALL)
        out = lif.run(spikes_in)
        if features == "counts":
            assert (out == np.round(out)).all() and (out >= 0).all()
        assert lif.params["features"] == features
    params = lif.params
    assert params["size"] == 80 and params["input_size"] == 3 and params["dt_ms"] == 1.0
    assert params["tau_m_ms"] == 20.0 and params["input_mode"] == "synaptic"


def test_lif_weights_follow_dales_law():
    lif = LifReservoir(input_size=2, **SMALL)
    w = lif.recurrent_weights
    assert w.shape == (80, 80) and lif.input_weights.shape == (80, 2)
    assert (np.diag(w) == 0).all()
    excitatory = lif.excitatory
    assert excitatory.dtype == bool and excitatory.sum() == 64  # 0.8 of 80
    assert (w[:, excitatory] >= 0).all() and (w[:, ~excitatory] <= 0).all()
    pointers, columns, values = lif.recurrent_csr
    dense = np.zeros_like(w)
    for row in range(80):
        span = slice(pointers[row], pointers[row + 1])
        dense[row, columns[span]] = values[span]
    np.testing.assert_array_equal(dense, w)


def test_lif_from_weights_gives_the_same_features(spikes_in):
    lif = LifReservoir(input_size=3, input_mode="synaptic", **SMALL)
    params = {k: lif.params[k] for k in ("dt_ms", "input_mode", "seed")}
    copy = LifReservoir.from_weights(
        lif.recurrent_weights, lif.input_weights, device="cpu", **params
    )
    assert (copy.size, copy.input_size) == (80, 3)
    np.testing.assert_array_equal(copy.excitatory, lif.excitatory)
    np.testing.assert_array_equal(copy.run(spikes_in), lif.run(spikes_in))


def test_lif_errors(spikes_in):
    with pytest.raises(ValueError, match="lif.tau_m_ms"):
        LifReservoir(tau_m_ms=-1.0, device="cpu")
    with pytest.raises(ValueError, match="lif.v_reset"):
        LifReservoir(v_reset=2.0, device="cpu")
    with pytest.raises(ValueError, match="input_mode"):
        LifReservoir(input_mode="voltage", device="cpu")
    with pytest.raises(TypeError, match="unknown parameter"):
        LifReservoir(tau=3.0)
    with pytest.raises(TypeError, match="dt_ms: expected a number"):
        LifReservoir(dt_ms="1")
    lif = LifReservoir(input_size=2, **SMALL)
    with pytest.raises(ValueError, match="shape"):
        lif.run(spikes_in)
    with pytest.raises(ValueError, match="Dale's law"):
        LifReservoir.from_weights(
            np.array([[0.0, 1.0], [-1.0, 0.0]]), np.ones((2, 1)), excitatory=[True, True]
        )
    with pytest.raises(ValueError, match="LIF weights"):
        LifReservoir.from_weights(np.zeros((3, 3)), np.ones((2, 1)), device="cpu")
