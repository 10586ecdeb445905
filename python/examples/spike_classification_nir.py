"""Spike-pattern classification with a LIF reservoir, exported to NIR.

Three random spike templates are the classes; every sample is one of them, its spikes
jittered, at a random onset in Poisson background noise. A LIF reservoir runs each sample;
a ridge readout on the spike traces at the last step predicts the class. The reservoir and
its readout are then written as a NIR graph, which NIR tools (and `reservoir.nir.from_nir`)
read.

    python examples/spike_classification_nir.py [output.nir]
"""

import sys
import warnings

import numpy as np

import reservoir
from reservoir.nir import from_nir, readout_from_nir, to_nir
from reservoir.spikes import LifReservoir, plant_patterns, random_template

CHANNELS, CLASSES, SAMPLES = 24, 3, 300
TEMPLATE_MS, SAMPLE_MS = 40.0, 60.0


def samples(seed):
    """`SAMPLES` streams (SAMPLE_MS x CHANNELS at 1 ms) and their classes."""
    templates = [random_template(CHANNELS, TEMPLATE_MS, 30, seed=c) for c in range(CLASSES)]
    labels = np.arange(SAMPLES) % CLASSES
    streams = [
        plant_patterns(
            [templates[label]],
            CHANNELS,
            SAMPLE_MS,
            background_hz=8.0,
            jitter_ms=2.0,
            seed=seed * SAMPLES + i,
        )[0]
        for i, label in enumerate(labels)
    ]
    return np.stack(streams), labels


def main(path="spike_classifier.nir"):
    train, train_labels = samples(seed=1)
    test, test_labels = samples(seed=2)
    lif = LifReservoir(
        input_size=CHANNELS,
        size=300,
        dt_ms=1.0,
        input_mode="synaptic",
        input_scaling=2.0,
        refractory_ms=2.0,
        seed=7,
        device="cpu",
    )
    last = lambda x: lif.run_many(x)[:, -1, :]  # noqa: E731 - traces at the last step
    onehot = np.eye(CLASSES)[train_labels]
    readout = reservoir.Readout.ridge(last(train), onehot, 1e-2)
    accuracy = (readout.predict(last(test)).argmax(axis=1) == test_labels).mean()
    print(f"LIF reservoir ({lif.size} neurons on {lif.device}): test accuracy {accuracy:.1%}")

    # NIR has no refractory period: other tools run the neurons without it (lossy=True
    # accepts that, and a warning says what changes); the metadata keeps it for from_nir.
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        graph = to_nir(lif, encoder=None, readout=readout, lossy=True)
    for note in notes:
        print(f"note: {note.message}")
    import nir

    nir.write(path, graph)
    print(f"wrote {path}: nodes {list(graph.nodes)}")

    # Read back: the same reservoir and readout, the same predictions.
    again = from_nir(path, device="cpu")
    weights, intercept = readout_from_nir(path)
    same = again.run_many(test)[:, -1, :] @ weights + intercept
    print(
        "read back, same predictions:",
        np.array_equal(same.argmax(1), readout.predict(last(test)).argmax(1)),
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
