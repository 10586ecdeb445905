#!/usr/bin/env python3
"""ReservoirPy 0.4.2 and our Python package side by side, in one process, on the same data.

Two tasks, the same hyper-parameters for both tools (units, spectral radius, leak rate, input
scaling, 10 % recurrent and input connectivity, ridge), both timed with time.perf_counter
from building the reservoir to the last test prediction (not generating the data):

- `series`: one NARMA-10 series, fit on T training steps (the first 100 left out as warm-up),
  then the test series run from the zero state and scored by NRMSE after its first 100 steps.
  ReservoirPy: `Reservoir >> Ridge`, `fit(u, y, warmup=100)`, then `reset()` and `run`.
  Ours: `reservoir.ESNRegressor(...).fit(u, y)`, `predict`.
- `sequences`: classifying many sequences by their last state (the synthetic mixtures of
  sinusoids of sequences_vs_reservoirpy.py: B training and B/4 test sequences of T steps,
  K channels, C classes). ReservoirPy in its per-sequence loop (`reset()`, `run`, last row),
  then `Ridge.fit` on one-hot labels; ours `reservoir.ESNClassifier(...).fit`, `predict`.

Prints a line per task and tool (the median seconds of --repeat runs, the scores of the
first) and the JSON lines of its figures (`records.py`). Example, from the repository root
(with the package installed, see python/):

    python3 benches/python/package_vs_reservoirpy.py --repeat 3
"""

import argparse
import statistics
import time

import numpy as np
import reservoir
from records import Recorder
from sequences_vs_reservoirpy import make_synthetic_arrays

WARMUP = 100


def nrmse(predicted, truth):
    """RMSE over the standard deviation of the truth (population), averaged over columns."""
    error = np.sqrt(np.mean((predicted - truth) ** 2, axis=0))
    return float(np.mean(error / np.std(truth, axis=0)))


def series_reservoirpy(a, u, y, u_test, y_test):
    from reservoirpy.nodes import Reservoir, Ridge

    res = Reservoir(units=a.units, sr=a.sr, lr=a.lr, input_scaling=a.input_scaling, seed=a.seed)
    esn = res >> Ridge(ridge=a.ridge)
    esn.fit(u, y, warmup=WARMUP)
    res.reset()
    predicted = esn.run(u_test)
    return nrmse(predicted[WARMUP:], y_test[WARMUP:])


def series_ours(a, u, y, u_test, y_test):
    model = reservoir.ESNRegressor(
        size=a.units, spectral_radius=a.sr, leak_rate=a.lr, input_scaling=a.input_scaling,
        ridge=a.ridge, washout=WARMUP, seed=a.seed, device=a.device,
    ).fit(u, y)
    predicted = model.predict(u_test)
    return nrmse(predicted[WARMUP:], y_test[WARMUP:])


def sequences_reservoirpy(a, x_train, y_train, x_test, y_test, classes):
    from reservoirpy.nodes import Reservoir, Ridge

    res = Reservoir(units=a.units, sr=a.sr, lr=a.lr, input_scaling=a.input_scaling, seed=a.seed)
    readout = Ridge(ridge=a.ridge)

    def last_states(sequences):
        states = np.empty((len(sequences), a.units))
        for i, x in enumerate(sequences):
            if res.initialized:
                res.reset()
            states[i] = res.run(x)[-1]
        return states

    readout.fit(last_states(x_train), np.eye(classes)[y_train])
    predicted = np.argmax(readout.run(last_states(x_test)), axis=1)
    return float(np.mean(predicted == y_test))


def sequences_ours(a, x_train, y_train, x_test, y_test, classes):
    model = reservoir.ESNClassifier(
        size=a.units, spectral_radius=a.sr, leak_rate=a.lr, input_scaling=a.input_scaling,
        ridge=a.ridge, seed=a.seed, device=a.device,
    ).fit(x_train, y_train)
    return float(np.mean(model.predict(x_test) == y_test))


def timed(repeat, body):
    """(median seconds, score of the first run) of `repeat` runs of `body`."""
    seconds, scores = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        scores.append(body())
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), scores[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="series,sequences")
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--sr", type=float, default=0.9)
    ap.add_argument("--lr", type=float, default=1.0)
    ap.add_argument("--input-scaling", type=float, default=1.0)
    ap.add_argument("--ridge", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-steps", type=int, default=10_000, help="series: training steps T")
    ap.add_argument("--sequences", default="2000,100,8,5", help="sequences: B,T,K,C")
    ap.add_argument("--device", default="cpu", help="our device: auto, cpu, cuda, cuda:N")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import reservoirpy

    recorder = Recorder("package_vs_reservoirpy")
    tools = (f"ReservoirPy {reservoirpy.__version__}", f"reservoir (Python package), {a.device}")
    tasks = a.tasks.split(",")
    if "series" in tasks:
        u_all, y_all = reservoir.tasks.narma10(a.train_steps + 2000, seed=a.seed)
        data = (u_all[: a.train_steps], y_all[: a.train_steps],
                u_all[a.train_steps:], y_all[a.train_steps:])
        for tool, body in zip(tools, (series_reservoirpy, series_ours)):
            seconds, score = timed(a.repeat, lambda body=body: body(a, *data))
            print(f"series, {tool}: {seconds:.4f} s, test NRMSE {score:.5f}", flush=True)
            case = {"task": "series", "units": a.units, "train steps": a.train_steps, "tool": tool}
            recorder.figure(case, "fit + predict", seconds, "s")
            recorder.figure(case, "test NRMSE", score, "")
    if "sequences" in tasks:
        b, steps, k, c = (int(v) for v in a.sequences.split(","))
        x_train, y_train, x_test, y_test = make_synthetic_arrays(b, steps, k, c, a.seed)
        data = (list(x_train), y_train, list(x_test), y_test, c)
        for tool, body in zip(tools, (sequences_reservoirpy, sequences_ours)):
            seconds, score = timed(a.repeat, lambda body=body: body(a, *data))
            print(f"sequences, {tool}: {seconds:.4f} s, test accuracy {score:.4f}", flush=True)
            case = {"task": "sequences", "units": a.units, "sequences": a.sequences, "tool": tool}
            recorder.figure(case, "fit + predict", seconds, "s")
            recorder.figure(case, "test accuracy", score, "")


if __name__ == "__main__":
    main()
