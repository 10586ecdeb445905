#!/usr/bin/env python3
"""The many-sequence classifier job as users run it, on every device of one host, in one run.

The job: `reservoir fit --config benches/python/esn500.toml` (N = 500, last state, ridge
readout) on a synthetic set of B training and B/4 test sequences of T steps, K channels and C
classes (`sequences_vs_reservoirpy.py --synthetic B,T,K,C` writes the same pair), read from
.npz files. Measured, each `--repeat` times (median printed):

- the command line on `cuda`, `cpu` and `auto`, and on `cuda` with `--gpu-matmul f16`:
  `fit_seconds` (weights to the last test prediction), the seconds reading the files, the
  process's wall time, the test accuracy, and the fit's phases (first run);
- the same fit from Python (`reservoir.ESNClassifier` with the config's parameters) on the
  training arrays already in memory: the first `fit` in the process (it opens the GPU) and a
  second one;
- a first GPU run on a fresh machine against a warm one: `reservoir run configs/narma10.toml
  --device cuda --no-save` with an empty kernel cache and the driver's own cache off
  (`CUDA_CACHE_DISABLE=1`), then again with the cache the first run filled.

Prints a table per part and the JSON lines of every figure (`records.py`). From the repository
root, on a GPU machine:

    python3 benches/python/many_sequences_job.py --reservoir-bin target/release/reservoir
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from records import REPO, Recorder, gpu_model
from sequences_vs_reservoirpy import make_synthetic

CONFIG = REPO / "benches" / "python" / "esn500.toml"
# The parameters of esn500.toml, for the Python estimator.
PYTHON_PARAMS = {
    "size": 500,
    "spectral_radius": 0.9,
    "connection_prob": 0.1,
    "input_connectivity": 0.1,
    "leak_rate": 0.3,
    "input_scaling": 1.0,
    "seed": 1,
    "ridge": 1e-6,
    "features": "last",
}


def timed(command, env=None):
    """Runs `command`; returns (wall seconds, stdout). Stops the benchmark on failure."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(
            f"many_sequences_job: {' '.join(map(str, command))} failed: {done.stderr}"
        )
    return wall, done.stdout


def cli_fits(args, data, rec):
    """The command line's fit on each device, `--repeat` times."""
    rows = []
    base = [
        args.reservoir_bin,
        "fit",
        "--config",
        str(CONFIG),
        "--train",
        str(data / "train.npz"),
        "--test",
        str(data / "test.npz"),
        "--inputs",
        "x",
        "--label-column",
        "labels",
        "--json",
    ]
    cases = [
        ("cuda", []),
        ("cpu", []),
        ("auto", []),
        ("cuda, f16", ["--gpu-matmul", "f16"]),
    ]
    # One run first, so that every timed run finds the kernels in the cache.
    timed(base + ["--device", "cuda"])
    timed(base + ["--device", "cuda", "--gpu-matmul", "f16"])
    for name, extra in cases:
        device = name.split(",")[0]
        walls, fits, reads, first = [], [], [], None
        for _ in range(args.repeat):
            wall, out = timed(base + ["--device", device] + extra)
            report = json.loads(out)
            walls.append(wall)
            fits.append(report["fit_seconds"])
            reads.append(report["read_seconds"])
            first = first or report
        row = {
            "case": name,
            "backend": first["backend"],
            "fit": statistics.median(fits),
            "read": statistics.median(reads),
            "wall": statistics.median(walls),
            "accuracy": first["test_accuracy"],
            "phases": ", ".join(
                f"{p['name']} {p['seconds']:.3f}" for p in first["phases"]
            ),
        }
        rows.append(row)
        case = {
            "front end": "reservoir fit",
            "data": args.synthetic,
            "device": name,
            "ran on": row["backend"],
        }
        for key, metric, unit in [
            ("fit", "fit_seconds", "s"),
            ("read", "reading the files", "s"),
            ("wall", "process wall", "s"),
            ("accuracy", "test accuracy", ""),
        ]:
            rec.figure(case, metric, row[key], unit)
    return rows


def python_fits(args, data, rec):
    """The same training set from Python, arrays in memory: a first and a second fit."""
    try:
        import reservoir
    except ImportError as e:
        print(f"(Python part skipped: the `reservoir` package is not importable: {e})")
        return []
    with np.load(data / "train.npz") as archive:
        x, y = archive["x"], archive["labels"]
    rows = []
    for device in ["cuda", "cpu"]:
        seconds = []
        for _ in range(2):
            model = reservoir.ESNClassifier(**PYTHON_PARAMS, device=device)
            started = time.perf_counter()
            model.fit(x, y)
            seconds.append(time.perf_counter() - started)
        row = {
            "device": device,
            "placed": model.device_,
            "first": seconds[0],
            "second": seconds[1],
        }
        rows.append(row)
        case = {
            "front end": "ESNClassifier.fit",
            "data": args.synthetic,
            "device": device,
            "ran on": model.device_,
        }
        rec.figure(case, "first fit in the process", seconds[0], "s")
        rec.figure(case, "second fit", seconds[1], "s")
    return rows


def first_runs(args, rec):
    """A first GPU run (empty caches) against a warm one, `--repeat` pairs."""
    command = [
        args.reservoir_bin,
        "run",
        str(REPO / "configs" / "narma10.toml"),
        "--device",
        "cuda",
        "--no-save",
        "--json",
    ]
    cold, warm = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, RESERVOIR_KERNEL_CACHE=cache, CUDA_CACHE_DISABLE="1")
            cold.append(timed(command, env)[0])
            warm.append(timed(command, env)[0])
    row = {"cold": statistics.median(cold), "warm": statistics.median(warm)}
    case = {"front end": "reservoir run configs/narma10.toml", "device": "cuda"}
    rec.figure(case, "first run (empty caches)", row["cold"], "s")
    rec.figure(case, "warm run", row["warm"], "s")
    rec.figure(case, "first run / warm run", row["cold"] / row["warm"], "")
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--reservoir-bin", default=str(REPO / "target" / "release" / "reservoir")
    )
    parser.add_argument("--synthetic", default="40000,100,8,5", help="B,T,K,C")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rec = Recorder("many_sequences_job", gpu_model())
    print(f"host: {rec.cpu}; GPU: {rec.gpu}")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        make_synthetic(args.synthetic, 1, data)
        cli = cli_fits(args, data, rec)
        python = python_fits(args, data, rec)
    first = first_runs(args, rec)

    print(f"\n`reservoir fit`, {args.synthetic} (B,T,K,C), median of {args.repeat}")
    print(
        "| device | ran on | fit_seconds | reading the files (s) | process wall (s) | test accuracy |"
    )
    print("|---|---|---|---|---|---|")
    for r in cli:
        print(
            f"| {r['case']} | {r['backend']} | {r['fit']:.3f} | {r['read']:.3f} | "
            f"{r['wall']:.3f} | {r['accuracy']:.4f} |"
        )
    for r in cli:
        print(f"phases, {r['case']}: {r['phases']}")
    if python:
        print("\nPython `ESNClassifier.fit` on the training arrays in memory (s)")
        print("| device | ran on | first fit | second fit |")
        print("|---|---|---|---|")
        for r in python:
            print(
                f"| {r['device']} | {r['placed']} | {r['first']:.3f} | {r['second']:.3f} |"
            )
    print(
        f"\nFirst GPU run (empty kernel cache, driver cache off) against a warm one, "
        f"`reservoir run configs/narma10.toml --device cuda`, median of {args.repeat}: "
        f"{first['cold']:.3f} s against {first['warm']:.3f} s "
        f"({first['cold'] / first['warm']:.2f}×)"
    )


if __name__ == "__main__":
    main()
