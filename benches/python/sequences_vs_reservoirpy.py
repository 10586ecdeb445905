#!/usr/bin/env python3
"""Sequence classification with ReservoirPy 0.4.2 and, optionally, our `reservoir fit`, on the same data.

ReservoirPy is used the way its tutorials classify many sequences: one `Reservoir` and one
`Ridge`; every sequence is run from the zero state and its last state is kept; the ridge readout
is fitted on the stacked last states against one-hot labels; a test sequence's class is the
argmax of the readout. Timed (time.perf_counter): building the nodes, every reservoir run, the
readout fit and the test prediction; not reading the data.

The data is either a long-form CSV pair (one row per time step: sequence id, step, label,
inputs; see examples/data/) or a reproducible synthetic set (`--synthetic B,T,K,C`: B training
and B//4 test sequences of T steps, K channels, C classes, each class its own random mixture of
sinusoids plus noise), which is also written as train.npz / test.npz (`x`: n × T × K float64,
`labels`: n int64) so that another program can read exactly the same data.

Prints a line per tool and the JSON lines of its figures (`records.py`). Examples, from the
repository root:

    python3 benches/python/sequences_vs_reservoirpy.py \\
        --train examples/data/japanese_vowels/train.csv --test examples/data/japanese_vowels/test.csv
    python3 benches/python/sequences_vs_reservoirpy.py --synthetic 2000,100,8,5 \\
        --reservoir-bin target/release/reservoir --config benches/python/esn500.toml --repeat 3
"""
import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from records import Recorder


@dataclass
class Dataset:
    """Train and test sequences (each T_i × K float64) with integer class indices."""

    name: str
    x_train: list
    y_train: np.ndarray
    x_test: list
    y_test: np.ndarray
    n_classes: int
    cli_args: list  # how `reservoir fit` reads the same files


def die(msg):
    """Stop with a message on standard error."""
    sys.exit(f"sequences_vs_reservoirpy: {msg}")


def read_long_csv(path, inputs, seq_col, time_col, label_col):
    """Sequences of a long-form CSV, in order of first appearance.

    Returns (sequences, labels, inputs): each sequence a (steps × len(inputs)) float64 array
    sorted by the time column, its label the text of the label column (one per sequence), and
    the input columns used (every column but the three named ones when `inputs` is None).
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        for col in (seq_col, time_col, label_col, *(inputs or [])):
            if col not in columns:
                die(f"{path}: no column {col!r} (columns: {', '.join(columns)})")
        if inputs is None:
            inputs = [c for c in columns if c not in (seq_col, time_col, label_col)]
        rows, labels = {}, {}
        for row in reader:
            key = row[seq_col]
            rows.setdefault(key, []).append((float(row[time_col]), [float(row[c]) for c in inputs]))
            if labels.setdefault(key, row[label_col]) != row[label_col]:
                die(f"{path}: sequence {key!r} has more than one label")
    sequences = [np.array([v for _, v in sorted(steps, key=lambda s: s[0])]) for steps in rows.values()]
    return sequences, list(labels.values()), inputs


def label_key(label):
    """Sort key putting integer labels in numeric order, before any other labels."""
    try:
        return (0, int(label), "")
    except ValueError:
        return (1, 0, label)


def load_csv_dataset(a):
    """The dataset of --train/--test CSV files, classes numbered in sorted label order."""
    inputs = a.inputs.split(",") if a.inputs else None
    x_train, l_train, inputs = read_long_csv(a.train, inputs, a.sequence_column, a.time_column,
                                             a.label_column)
    x_test, l_test, _ = read_long_csv(a.test, inputs, a.sequence_column, a.time_column,
                                      a.label_column)
    classes = sorted(set(l_train), key=label_key)
    index = {c: i for i, c in enumerate(classes)}
    cli_args = ["--train", str(a.train), "--test", str(a.test), "--inputs", ",".join(inputs),
                "--sequence-column", a.sequence_column, "--time-column", a.time_column,
                "--label-column", a.label_column]
    return Dataset(
        name=a.name or a.train.resolve().parent.name,
        x_train=x_train,
        y_train=np.array([index[l] for l in l_train]),
        x_test=x_test,
        y_test=np.array([index.get(l, -1) for l in l_test]),  # unseen in training: always wrong
        n_classes=len(classes),
        cli_args=cli_args,
    )


def synthetic_split(rng, n, steps, freq, amp, phase):
    """n sequences, each of a random class: its class's sinusoids, jittered, plus noise.

    Per sequence and channel the phase moves by U(-1.5, 1.5) rad and the amplitude by a factor
    U(0.8, 1.2); unit Gaussian noise is added at every step.
    """
    n_classes, channels, _ = freq.shape
    labels = rng.integers(0, n_classes, size=n)
    t = np.arange(steps)[None, :, None]                       # 1 × T × 1
    jitter = rng.uniform(-1.5, 1.5, size=(n, 1, channels))
    gain = rng.uniform(0.8, 1.2, size=(n, 1, channels))
    x = rng.normal(0.0, 1.0, size=(n, steps, channels))
    for j in range(freq.shape[2]):
        f, a, p = (m[labels, :, j][:, None, :] for m in (freq, amp, phase))  # n × 1 × K
        x += gain * a * np.sin(2 * np.pi * f * t + p + jitter)
    return x, labels.astype(np.int64)


def make_synthetic_arrays(b, steps, channels, n_classes, seed):
    """The synthetic train and test arrays: (x_train, y_train, x_test, y_test)."""
    rng = np.random.default_rng(seed)
    components = 3
    freq = rng.uniform(0.01, 0.2, size=(n_classes, channels, components))  # cycles per step
    amp = rng.uniform(0.2, 1.0, size=(n_classes, channels, components))
    phase = rng.uniform(0.0, 2 * np.pi, size=(n_classes, channels, components))
    x_train, y_train = synthetic_split(rng, b, steps, freq, amp, phase)
    x_test, y_test = synthetic_split(rng, b // 4, steps, freq, amp, phase)
    return x_train, y_train, x_test, y_test


def make_synthetic(spec, seed, out_dir):
    """The `--synthetic B,T,K,C` dataset, also written to out_dir/{train,test}.npz."""
    try:
        b, steps, channels, n_classes = (int(v) for v in spec.split(","))
    except ValueError:
        die(f"--synthetic wants B,T,K,C (four integers), got {spec!r}")
    if min(b // 4, steps, channels) < 1 or n_classes < 2:
        die("--synthetic needs B >= 4, T >= 1, K >= 1 and C >= 2")
    x_train, y_train, x_test, y_test = make_synthetic_arrays(b, steps, channels, n_classes, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez(out_dir / "train.npz", x=x_train, labels=y_train)
    np.savez(out_dir / "test.npz", x=x_test, labels=y_test)
    print(f"sequences_vs_reservoirpy: synthetic data written to {out_dir}/{{train,test}}.npz",
          file=sys.stderr)
    return Dataset(
        name=f"synthetic-{b}x{steps}x{channels}-{n_classes}classes-seed{seed}",
        x_train=list(x_train),
        y_train=y_train,
        x_test=list(x_test),
        y_test=y_test,
        n_classes=n_classes,
        cli_args=["--train", str(out_dir / "train.npz"), "--test", str(out_dir / "test.npz"),
                  "--inputs", "x", "--label-column", "labels"],
    )


def last_states(reservoir, sequences):
    """Each sequence's last reservoir state, every run starting from the zero state."""
    states = np.empty((len(sequences), reservoir.units))
    for i, x in enumerate(sequences):
        if reservoir.initialized:
            reservoir.reset()
        states[i] = reservoir.run(x)[-1]
    return states


def reservoirpy_once(ds, a):
    """One timed ReservoirPy fit + predict; returns (seconds, train accuracy, test accuracy)."""
    from reservoirpy.nodes import Reservoir, Ridge

    t0 = time.perf_counter()
    reservoir = Reservoir(units=a.units, sr=a.sr, lr=a.lr, input_scaling=a.input_scaling,
                          seed=a.seed)
    readout = Ridge(ridge=a.ridge)
    train_states = last_states(reservoir, ds.x_train)
    readout.fit(train_states, np.eye(ds.n_classes)[ds.y_train])
    test_pred = np.argmax(readout.run(last_states(reservoir, ds.x_test)), axis=1)
    seconds = time.perf_counter() - t0
    train_pred = np.argmax(readout.run(train_states), axis=1)
    return seconds, float(np.mean(train_pred == ds.y_train)), float(np.mean(test_pred == ds.y_test))


def run_reservoirpy(ds, a):
    """ReservoirPy's results: accuracies of the first run, median seconds of --repeat runs."""
    try:
        import reservoirpy
    except ImportError as e:
        die(f"reservoirpy is not importable ({e}): pip install -r benches/python/requirements.txt")
    runs = [reservoirpy_once(ds, a) for _ in range(a.repeat)]
    return {
        "tool": "reservoirpy",
        "version": reservoirpy.__version__,
        "dataset": ds.name,
        "n_train": len(ds.x_train),
        "n_test": len(ds.x_test),
        "units": a.units,
        "test_accuracy": runs[0][2],
        "train_accuracy": runs[0][1],
        "fit_predict_seconds": statistics.median(r[0] for r in runs),
        "runs_seconds": [r[0] for r in runs],
        "numpy": np.__version__,
    }


def run_ours(ds, a):
    """Our CLI's results (median of --repeat runs), or None after a message if it failed."""
    cmd = [str(a.reservoir_bin), "fit", "--config", str(a.config), *ds.cli_args, "--json",
           "--device", a.device]
    reports, walls = [], []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            print(f"sequences_vs_reservoirpy: could not start {a.reservoir_bin}: {e}", file=sys.stderr)
            return None
        walls.append(time.perf_counter() - t0)
        if p.returncode != 0:
            print(f"sequences_vs_reservoirpy: `{' '.join(cmd)}` failed with exit status "
                  f"{p.returncode}:\n{p.stderr.strip()[-2000:]}", file=sys.stderr)
            return None
        try:
            reports.append(json.loads(p.stdout))
        except json.JSONDecodeError:
            print(f"sequences_vs_reservoirpy: `{' '.join(cmd)}` did not print one JSON object:\n"
                  f"{p.stdout.strip()[-2000:]}", file=sys.stderr)
            return None
    first = reports[0]
    version = subprocess.run([str(a.reservoir_bin), "--version"], capture_output=True, text=True)
    with open(a.config, "rb") as f:
        units = tomllib.load(f).get("reservoir", {}).get("size")
    return {
        "tool": "reservoir",
        "version": version.stdout.strip(),
        "dataset": ds.name,
        "n_train": first.get("n_train_sequences"),
        "n_test": first.get("n_test_sequences"),
        "units": units,
        "test_accuracy": first.get("test_accuracy"),
        "train_accuracy": first.get("train_accuracy"),
        "fit_seconds": statistics.median(r["fit_seconds"] for r in reports),
        "process_seconds": statistics.median(walls),
        "runs_fit_seconds": [r["fit_seconds"] for r in reports],
        "device": a.device,
        "report": first,
    }


def parse_args():
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    data = ap.add_argument_group("data (either --train and --test, or --synthetic)")
    data.add_argument("--train", type=Path, help="long-form training CSV")
    data.add_argument("--test", type=Path, help="long-form test CSV")
    data.add_argument("--inputs", help="comma-separated input columns (default: every column "
                      "except the sequence, time and label columns)")
    data.add_argument("--sequence-column", default="sequence")
    data.add_argument("--time-column", default="step")
    data.add_argument("--label-column", default="label")
    data.add_argument("--name", help="dataset name in the output (default: the CSV's folder)")
    data.add_argument("--synthetic", metavar="B,T,K,C",
                      help="B training and B//4 test sequences of T steps, K channels, C classes")
    data.add_argument("--data-seed", type=int, default=0, help="seed of the synthetic data")
    data.add_argument("--out-dir", type=Path,
                      help="where the synthetic train.npz/test.npz go (default: a folder named "
                      "after the data in the system's temporary directory)")
    esn = ap.add_argument_group("ReservoirPy hyper-parameters")
    esn.add_argument("--units", type=int, default=500)
    esn.add_argument("--sr", type=float, default=0.9, help="spectral radius")
    esn.add_argument("--lr", type=float, default=0.3, help="leak rate")
    esn.add_argument("--input-scaling", type=float, default=1.0)
    esn.add_argument("--ridge", type=float, default=1e-6)
    esn.add_argument("--seed", type=int, default=1, help="reservoir weights seed")
    ours = ap.add_argument_group("our CLI, run on the same files (optional)")
    ours.add_argument("--reservoir-bin", type=Path, help="path to the `reservoir` binary")
    ours.add_argument("--config", type=Path, help="its TOML config (same hyper-parameters)")
    ours.add_argument("--device", default="cpu", help="passed as --device (default cpu)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per tool; the median time is reported")
    a = ap.parse_args()
    if (a.synthetic is None) == (a.train is None):
        ap.error("give either --train and --test, or --synthetic")
    if a.train is not None and a.test is None:
        ap.error("--train needs --test")
    if (a.reservoir_bin is None) != (a.config is None):
        ap.error("--reservoir-bin and --config go together")
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    return a


def main():
    a = parse_args()
    if a.synthetic:
        out_dir = a.out_dir or Path(tempfile.gettempdir()) / (
            f"reservoir-synthetic-{a.synthetic.replace(',', 'x')}-seed{a.data_seed}")
        ds = make_synthetic(a.synthetic, a.data_seed, out_dir)
    else:
        ds = load_csv_dataset(a)
    recorder = Recorder("sequences_vs_reservoirpy")
    theirs = run_reservoirpy(ds, a)
    record(recorder, theirs, f"ReservoirPy {theirs['version']}", theirs["fit_predict_seconds"])
    if a.reservoir_bin is not None:
        ours = run_ours(ds, a)
        if ours is None:
            sys.exit(1)
        seconds = ours["fit_seconds"]
        record(recorder, ours, f"reservoir fit, {a.device}", seconds, ours["process_seconds"])


def record(recorder, result, tool, seconds, process_seconds=None):
    """Prints a tool's results: a line, and the JSON lines of its figures."""
    print(f"{tool} on {result['dataset']} ({result['n_train']} + {result['n_test']} sequences, "
          f"{result['units']} units): fit + predict {seconds:.3f} s, test accuracy "
          f"{result['test_accuracy']:.4f}, training accuracy {result['train_accuracy']:.4f}", flush=True)
    case = {"dataset": result["dataset"], "units": result["units"], "tool": tool}
    recorder.figure(case, "fit + predict", seconds, "s")
    recorder.figure(case, "process wall", process_seconds, "s")
    recorder.figure(case, "test accuracy", result["test_accuracy"], "")
    recorder.figure(case, "training accuracy", result["train_accuracy"], "")


if __name__ == "__main__":
    main()
