#!/usr/bin/env python3
"""The model kinds of the `[model]` table side by side on the time-series tasks, each with
`reservoir run` on the shipped configs over several seeds: on Mackey–Glass (one-step NRMSE and
the 84-step closed-loop NRMSE84), one echo-state network of 600 units against a deep stack of
three 200-unit layers (configs/deep_mackey_glass.toml, the input beside their states) and
NVAR (configs/nvar_mackey_glass.toml); on NARMA-10 (test NRMSE), the 500-unit network of
configs/narma10.toml with and without intrinsic plasticity and the input link
(configs/plasticity_narma10.toml). Mean and std over --seeds seeds of the weights; the task's
data are the same for every seed.

    cargo build --release -p reservoir-cli
    python3 benches/python/model_kinds.py [--binary target/release/reservoir] [--seeds 5]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from records import REPO, Recorder

CONFIGS = REPO / "configs"


def toml_text(tables):
    """`tables` (a parsed config) as TOML: plain tables, and arrays of tables one level down."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    lines = []
    for name, table in tables.items():
        plain = {k: v for k, v in table.items() if not isinstance(v, (dict, list)) or
                 (isinstance(v, list) and not (v and isinstance(v[0], dict)))}
        lines += [f"[{name}]", *(f"{k} = {value(v)}" for k, v in plain.items()), ""]
        for key, sub in table.items():
            if isinstance(sub, dict):
                lines += [f"[{name}.{key}]", *(f"{k} = {value(v)}" for k, v in sub.items()), ""]
            elif isinstance(sub, list) and sub and isinstance(sub[0], dict):
                for item in sub:
                    lines += [f"[[{name}.{key}]]", *(f"{k} = {value(v)}" for k, v in item.items()),
                              ""]
    return "\n".join(lines)


def variants():
    """(task, model name, parsed config) of every row."""
    shallow = tomllib.loads((CONFIGS / "mackey_glass.toml").read_text("utf-8"))
    shallow["reservoir"]["size"] = 600
    yield "mackey_glass", "echo state, 600 units", shallow
    deep = tomllib.loads((CONFIGS / "deep_mackey_glass.toml").read_text("utf-8"))
    yield "mackey_glass", "deep echo state, 3 x 200 units, input to readout", deep
    nvar = tomllib.loads((CONFIGS / "nvar_mackey_glass.toml").read_text("utf-8"))
    yield "mackey_glass", "NVAR, delay 8, order 2, strides 1", nvar
    narma = tomllib.loads((CONFIGS / "narma10.toml").read_text("utf-8"))
    yield "narma10", "echo state, 500 units", narma
    plastic = tomllib.loads((CONFIGS / "plasticity_narma10.toml").read_text("utf-8"))
    yield "narma10", "echo state, 500 units, plasticity, input to readout", plastic


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(REPO / "target" / "release" / "reservoir"))
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    recorder = Recorder("model_kinds")
    with tempfile.TemporaryDirectory() as workdir:
        for task, name, config in variants():
            metrics = {}
            for seed in range(1, args.seeds + 1):
                config.setdefault("reservoir", {})["seed"] = seed
                path = Path(workdir) / "config.toml"
                path.write_text(toml_text(config), encoding="utf-8")
                out = subprocess.run(
                    [args.binary, "run", str(path), "--device", "cpu", "--json", "--no-save"],
                    capture_output=True, text=True, check=False,
                )
                if out.returncode != 0:
                    sys.exit(f"{name}: {out.stderr.strip()}")
                report = json.loads(out.stdout)
                for metric in ("test_nrmse", "closed_loop_nrmse84"):
                    if metric in report:
                        metrics.setdefault(metric, []).append(report[metric])
            shown = []
            for metric, values in metrics.items():
                mean = statistics.mean(values)
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                shown.append(f"{metric} {mean:.4g} ± {spread:.2g}")
                case = {"task": task, "model": name, "seeds": args.seeds}
                recorder.figure(case, f"{metric} (mean)", mean, "")
                recorder.figure(case, f"{metric} (std)", spread, "")
            print(f"{task:<13} {name:<52} " + ", ".join(shown), flush=True)


if __name__ == "__main__":
    main()
