#!/usr/bin/env python3
"""Sequence classification on the bundled real datasets, one row per representation: the
last and mean states; the same with the time-reversed sequence's states beside them
(bidirectional); the reservoir model space of the states projected onto 30 principal
components; and the bidirectional model space with the last projected state.

Every representation gets the same search: `reservoir sweep` over spectral radius, leak rate,
input scaling and ridge on 5 stratified folds of the training sequences (the grid of each
dataset's `sweep.toml` in examples/data/), the best refitted on every training sequence and
scored once on the test file. The test file plays no part in choosing. Printed: the best
validation accuracy, the test accuracy and the sweep's wall time, as a table and as JSON lines
(records.py).

`--speed B,T` times the representations instead: `reservoir fit` on B synthetic training
sequences (and B/4 test ones) of T steps, 8 channels and 5 classes (the set of
sequences_vs_reservoirpy.py), N = 500 (benches/python/esn500.toml), on `--device`; each
representation's `fit_seconds` (the median of `--repeat` runs) and its ratio to the last
state's.

    cargo build --release -p reservoir-cli
    python3 benches/python/sequence_representations.py [--binary target/release/reservoir]
        [--datasets japanese_vowels,handwritten_digits,basic_motions,epilepsy]
    python3 benches/python/sequence_representations.py --speed 10000,100 [--device cpu|cuda]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from records import REPO, Recorder, gpu_model

DATA = REPO / "examples" / "data"

REPRESENTATIONS = {
    "last+mean": {"summaries": ["last", "mean"]},
    "bidirectional last+mean": {"summaries": ["last", "mean"], "bidirectional": True},
    "model space (30 components)": {"summaries": ["model_space"], "components": 30},
    "bidirectional model space+last (30 components)": {
        "summaries": ["model_space", "last"],
        "bidirectional": True,
        "components": 30,
    },
}


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def config_text(sweep_file, features):
    """The dataset's sweep config with its `[features]` table replaced by `features`."""
    config = tomllib.loads(sweep_file.read_text(encoding="utf-8"))
    config["features"] = features
    lines = []
    for table, values in config.items():
        lines.append(f"[{table}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in values.items()]
        lines.append("")
    return "\n".join(lines)


def channels(csv_path):
    with open(csv_path, encoding="utf-8") as f:
        header = f.readline().strip().split(",")
    return [c for c in header if c not in ("sequence", "step", "label")]


def sweep(binary, dataset, features, workdir):
    folder = DATA / dataset
    config = Path(workdir) / f"{dataset}.toml"
    config.write_text(config_text(folder / "sweep.toml", features), encoding="utf-8")
    command = [
        str(binary), "sweep", str(config),
        "--train", str(folder / "train.csv"), "--test", str(folder / "test.csv"),
        "--inputs", ",".join(channels(folder / "train.csv")),
        "--sequence-column", "sequence", "--time-column", "step", "--label-column", "label",
        "--device", "cpu", "--json",
    ]
    started = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"{dataset}: {' '.join(command)} failed:\n{out.stderr}")
    report = json.loads(out.stdout)
    best = report["sweep"]["results"][0]
    return {
        "validation": best["score"],
        "test": report["fit"]["test_accuracy"],
        "best": {k: best[k] for k in ("spectral_radius", "leak_rate", "input_scaling", "ridge")},
        "wall": wall,
    }


SPEED = {
    "last": {"summaries": ["last"]},
    "model space (30 components)": {"summaries": ["model_space"], "components": 30},
    "model space (75 components)": {"summaries": ["model_space"], "components": 75},
    "bidirectional model space (75 components)": {
        "summaries": ["model_space"],
        "bidirectional": True,
        "components": 75,
    },
}


def speed(args):
    """`fit_seconds` of every representation of SPEED on the synthetic set."""
    from sequences_vs_reservoirpy import make_synthetic

    b, steps = (int(v) for v in args.speed.split(","))
    gpu = gpu_model() if args.device != "cpu" else None
    recorder = Recorder("representation_speed", gpu=gpu)
    base = tomllib.loads((REPO / "benches" / "python" / "esn500.toml").read_text("utf-8"))
    with tempfile.TemporaryDirectory() as workdir:
        data = make_synthetic(f"{b},{steps},8,5", 1, Path(workdir))
        first = None
        for name, features in SPEED.items():
            config = Path(workdir) / "config.toml"
            tables = {**base, "features": features}
            config.write_text(
                "\n".join(
                    f"[{t}]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in vals.items())
                    for t, vals in tables.items()
                ),
                encoding="utf-8",
            )
            command = [args.binary, "fit", "--config", str(config), *data.cli_args,
                       "--device", args.device, "--json"]
            times, accuracy = [], None
            for _ in range(args.repeat):
                out = subprocess.run(command, capture_output=True, text=True, check=False)
                if out.returncode != 0:
                    sys.exit(f"{name}: {' '.join(command)} failed:\n{out.stderr}")
                report = json.loads(out.stdout)
                times.append(report["fit_seconds"])
                accuracy = report["test_accuracy"]
            seconds = statistics.median(times)
            first = first or seconds
            print(f"{name:<44} fit {seconds:8.3f} s  x{seconds / first:5.2f}  test acc {accuracy:.4f}",
                  flush=True)
            case = {"sequences": b, "steps": steps, "N": 500, "representation": name,
                    "device": args.device}
            recorder.figure(case, "fit_seconds (median)", seconds, "s")
            recorder.figure(case, "ratio to the last state", seconds / first, "")
            recorder.figure(case, "test accuracy", accuracy, "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(REPO / "target" / "release" / "reservoir"))
    parser.add_argument(
        "--datasets", default="japanese_vowels,handwritten_digits,basic_motions,epilepsy"
    )
    parser.add_argument("--speed", help="B,T: time the representations on synthetic data")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.speed:
        return speed(args)
    recorder = Recorder("sequence_representations")
    print(f"{'dataset':<20} {'representation':<48} {'val acc':>8} {'test acc':>8} {'wall s':>8}")
    with tempfile.TemporaryDirectory() as workdir:
        for dataset in args.datasets.split(","):
            for name, features in REPRESENTATIONS.items():
                result = sweep(args.binary, dataset, features, workdir)
                print(
                    f"{dataset:<20} {name:<48} {result['validation']:>8.4f} "
                    f"{result['test']:>8.4f} {result['wall']:>8.1f}   best {result['best']}",
                    flush=True,
                )
                case = {"dataset": dataset, "representation": name, "size": 500, "folds": 5}
                recorder.figure(case, "validation accuracy (best)", result["validation"], "")
                recorder.figure(case, "test accuracy", result["test"], "")
                recorder.figure(case, "sweep wall time", result["wall"], "s")


if __name__ == "__main__":
    main()
