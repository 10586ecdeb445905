#!/usr/bin/env python3
"""Our GPU LIF step against GeNN and Brian2CUDA, on the same GPU, in one command.

The network is the one of `benches/gpu_lif_bench.rs` (see `lif_vs_brian2.py` for the model):
N neurons, each receiving the same number of synapses (1 % of the others, or `--sizes N:p`),
80 % excitatory (Dale's law), W scaled to spectral radius 2; one input channel into 10 % of the
neurons, a level uniform on [0.3, 1) held for 10 ms; bias 0.9, tau_m 20 ms, tau_syn 5 ms,
threshold 1, reset and rest 0, t_ref 2 ms, dt 0.1 ms. Every simulator computes in float32.

Every run replays the same S input rows (as `gpu_lif_bench` does); the export writes the
levels that this gives, and every simulator runs W warm-up runs (`--warmup-runs`, default 1)
and then R timed runs of S steps from rest, continuing the trajectory. A large network is
silent for its first few hundred steps: give it W so that the timed runs fire.

* ours: `gpu_lif_bench --gpu-only` (event-driven, gather, and where the device has it the
  cluster run, a row each) also exports the network
  (`--export`). Timing: CUDA events around each run, median. Start-up: drawing the weights
  with the spectral estimate's products on the GPU (`gpu_generate_s`) and making the network
  on the device (`network_s`: W and Wᵀ); the context and the NVRTC compile are printed by the
  binary.
* GeNN (PyGeNN, CUDA backend): a custom neuron model that is our step (exact integration, the
  current held over a step, I_syn decayed and then given the spikes of the previous step
  through `DeltaCurr`), `StaticPulse` synapses, SPARSE connectivity. Where the export holds
  the synapses (up to 2·10^8) GeNN gets the very same synapses and weights; above that it
  draws its own on the GPU alike (`FixedNumberPreWithReplacement` with our in-degree, weights
  `±scale·m`, m uniform on (0, 1], the inhibitory scale ours), so only the rates can agree
  (`--genn-draw-too` measures that variant where it could have ours too). Timing: wall time
  of S calls of `step_time()` and one read of the spike counters per run, median; so its
  per-step Python call (as its users run it) is inside. GeNN picks its thread-block sizes
  by occupancy unless told; that chooser crashed in a build of GeNN that had the static
  libstdc++ below, and was not tried again, so here every kernel gets each of
  `--genn-block-sizes` in turn (a build each) and each is a row. Start-up:
  `build()` (code generation and nvcc) and `load()` (upload and initialisation).
* Brian2CUDA (`cuda_standalone`, where the export holds the synapses): the model of
  `lif_vs_brian2.py` in float32; its own timer of the run loop (`_last_run_time`) over the
  last run; `--repeats` runs of the compiled program, median. Its first row carries `check`:
  its spikes of the first 1000 steps against ours.

The rate column is each simulator's spikes over its timed runs; they must agree for the step
times to be comparable (the trajectories part after a few hundred steps: float rounding in a
chaotic network). Synaptic events/s: spikes times the mean out-degree, over the timed time.

Set-up on the GPU machine (Python 3.12, CUDA 13, numpy, pybind11, psutil there):
* PyGeNN 5.4.0 from a GeNN checkout: `CC=gcc CXX=g++ CUDA_PATH=... python3 setup.py build_ext
  --inplace -j 16`, the checkout on `PYTHONPATH` with a `pygenn-5.4.0.dist-info/METADATA`
  beside it (or `pip install .`). It needs the libffi headers (`CPATH`) and a libffi to link
  (`LIBRARY_PATH`). A g++ that links libstdc++ statically gives the process a second copy of
  it, and GeNN's code generator then crashes in `std::regex`: use the system g++.
* `pip install brian2==2.10.1 brian2cuda==1.0b1`; its makefile template asks nvcc for
  `-std=c++11`, which CUDA 13's Thrust and CUB refuse: change it to `-std=c++17`
  (`brian2cuda/templates/makefile`). Then:

    python3 benches/python/lif_vs_gpu_simulators.py --bin target/release/gpu_lif_bench \\
        --sizes 10000:0.01,100000:0.01,1000000:0.001 --warmup-runs 20 --work /tmp/lifsim

It prints a line per measurement, then a table of the medians and their JSON lines
(`records.py`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import subprocess
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lif_vs_brian2 import BrianNetwork
from records import Recorder, by_case, gpu_model, read_records


def run_ours(args: argparse.Namespace, export: Path) -> list[dict]:
    """Runs `gpu_lif_bench` on every size and returns a row per size and path."""
    command = [args.bin, "--gpu-only", "--sizes", args.sizes, "--runs", str(args.runs)]
    command += ["--warmup-runs", str(args.warmup_runs)]
    command += ["--export", str(export)]
    if args.steps:
        command += ["--steps", str(args.steps)]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        if not line.startswith("{"):
            print(f"  ours: {line}")
    cases = by_case(read_records(out))
    startup = {(c["N"], c["connection"]): f for c, f in cases if "N" in c and "path" not in c}
    rows = []
    for case, figures in cases:
        if "path" not in case:
            continue
        network = startup[(case["N"], case["connection"])]
        rows.append(
            {
                "tool": "ours",
                "path": case["path"],
                "n": case["N"],
                "synapses": int(network["synapses"]),
                "us_per_step": figures["step"],
                "rate_hz": figures["firing rate"],
                "synaptic_events_per_s": figures["synaptic events"],
                "gpu_generate_s": network["weights, GPU estimate"],
                "network_s": network["GPU network (W, Wᵀ)"],
            }
        )
    return rows


def step_constants(meta: dict) -> dict:
    """Our step's constants (crate::lif, "The step, exactly"), computed in float64 and
    rounded to float32 as ours are."""
    dt = meta["dt_ms"]
    alpha_m = np.float32(np.exp(-dt / meta["tau_m_ms"]))
    return {
        "alpha_m": float(alpha_m),
        "g_m": float(np.float32(meta["resistance"] * (1.0 - float(alpha_m)))),
        "alpha_syn": float(np.float32(np.exp(-dt / meta["tau_syn_ms"]))),
        "theta": meta["threshold"],
        "v_rest": meta["v_rest"],
        "v_reset": meta["v_reset"],
        "bias": meta["bias"],
        "n_ref": meta["refractory_steps"],
        "hold": meta["hold_steps"],
    }


class GennNetwork:
    """The exported network (or one drawn alike) built and loaded by PyGeNN."""

    def __init__(self, folder: Path, n: int, build: Path, draw: bool, block_size: int):
        import pygenn
        from pygenn import (
            GeNNModel,
            VarAccess,
            create_neuron_model,
            create_var_init_snippet,
            init_postsynaptic,
            init_sparse_connectivity,
            init_var,
            init_weight_update,
        )
        from pygenn.cuda_backend import BlockSizeSelect, DeviceSelect, Preferences

        self.version = pygenn.__version__
        meta = json.loads((folder / f"n{n}.json").read_text())
        self.meta = meta
        if meta["input_size"] != 1:
            raise SystemExit("the script drives one input channel")
        lif = create_neuron_model(
            "matched_lif",
            params=[
                "alpha_m",
                "g_m",
                "alpha_syn",
                "theta",
                "v_rest",
                "v_reset",
                "bias",
                ("n_ref", "int"),
                ("hold", "int"),
            ],
            vars=[
                ("V", "scalar"),
                ("Is", "scalar"),
                ("Refr", "int"),
                ("WIn", "scalar", VarAccess.READ_ONLY),
                ("Count", "unsigned int"),
            ],
            extra_global_params=[("levels", "scalar*")],
            sim_code="""
                Is = Is * alpha_syn + Isyn;
                const int step = (int)round(t / dt);
                const scalar ext = bias + WIn * levels[step / hold];
                if (Refr > 0) {
                    Refr -= 1;
                    V = v_reset;
                } else {
                    V = (v_rest + (V - v_rest) * alpha_m) + (Is + ext) * g_m;
                }
            """,
            threshold_condition_code="V >= theta",
            reset_code="""
                V = v_reset;
                Refr = n_ref;
                Count++;
            """,
        )
        self.block_size = block_size
        name = f"lif{n}_{'drawn' if draw else 'same'}_{block_size}"
        kernels = len(Preferences().manual_block_sizes)
        model = GeNNModel(
            "float",
            name,
            backend="cuda",
            time_precision="double",
            device_select_method=DeviceSelect.MANUAL,
            manual_device_id=0,
            block_size_select_method=BlockSizeSelect.MANUAL,
            manual_block_sizes=[block_size] * kernels,
        )
        model.dt = meta["dt_ms"]
        w_in = np.fromfile(folder / f"n{n}_w_in.f64", dtype="<f8").astype(np.float32)
        neurons = model.add_neuron_population(
            "neurons",
            n,
            lif,
            step_constants(meta),
            {"V": meta["v_rest"], "Is": 0.0, "Refr": 0, "WIn": w_in, "Count": 0},
        )
        levels = np.fromfile(folder / f"n{n}_u.f64", dtype="<f8").astype(np.float32)
        neurons.extra_global_params["levels"].set_init_values(levels)
        if not draw:
            self.synapses = "the same synapses"
            weights = np.fromfile(folder / f"n{n}_w.f64", dtype="<f8").astype(
                np.float32
            )
            synapses = model.add_synapse_population(
                "recurrent",
                "SPARSE",
                neurons,
                neurons,
                init_weight_update("StaticPulse", {}, {"g": weights}),
                init_postsynaptic("DeltaCurr"),
            )
            pre = np.fromfile(folder / f"n{n}_pre.u32", dtype="<u4")
            post = np.fromfile(folder / f"n{n}_post.u32", dtype="<u4")
            synapses.set_sparse_connections(pre, post)
            del pre, post, weights
        else:
            self.synapses = "drawn alike by GeNN"
            signed_uniform = create_var_init_snippet(
                "signed_uniform",
                params=["scale", "inhibitory_scale", ("excitatory", "unsigned int")],
                var_init_code="""
                    const scalar m = 1.0 - gennrand_uniform();
                    value = (id_pre < excitatory ? scale : inhibitory_scale) * m;
                """,
            )
            weight = init_var(
                signed_uniform,
                {
                    "scale": meta["w_exc_max"],
                    "inhibitory_scale": meta["w_inh_min"],
                    "excitatory": meta["excitatory"],
                },
            )
            model.add_synapse_population(
                "recurrent",
                "SPARSE",
                neurons,
                neurons,
                init_weight_update("StaticPulse", {}, {"g": weight}),
                init_postsynaptic("DeltaCurr"),
                init_sparse_connectivity(
                    "FixedNumberPreWithReplacement", {"num": meta["in_degree"]}
                ),
            )
        build.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        model.build(path_to_model=str(build))
        self.build_s = time.perf_counter() - started
        started = time.perf_counter()
        model.load()
        self.load_s = time.perf_counter() - started
        self.model = model
        self.count = neurons.vars["Count"]

    def spikes(self) -> int:
        self.count.pull_from_device()
        return int(self.count.view.astype(np.int64).sum())

    def measure(self, steps: int, warmup_runs: int, runs: int) -> list[dict]:
        """`warmup_runs`, then `runs` timed runs of `steps` steps, continuing."""
        meta, model = self.meta, self.model
        rows = []
        before = self.spikes()
        for run in range(warmup_runs + runs):
            started = time.perf_counter()
            for _ in range(steps):
                model.step_time()
            after = self.spikes()
            seconds = time.perf_counter() - started
            spikes, before = after - before, after
            if run < warmup_runs:
                continue
            model_s = steps * meta["dt_ms"] * 1e-3
            rows.append(
                {
                    "tool": "GeNN",
                    "version": self.version,
                    "synapses_from": self.synapses,
                    "block_size": self.block_size,
                    "n": meta["n"],
                    "synapses": meta["synapses"],
                    "steps": steps,
                    "us_per_step": seconds * 1e6 / steps,
                    "rate_hz": spikes / meta["n"] / model_s,
                    "synaptic_events_per_s": spikes * meta["in_degree"] / seconds,
                    "spikes": spikes,
                    "build_s": self.build_s,
                    "load_s": self.load_s,
                }
            )
        return rows


def row_label(row: dict) -> str:
    """The simulator and its variant: our path, GeNN's synapses and block size, or
    Brian2CUDA's version."""
    if row["tool"] == "GeNN":
        return f"GeNN {row['version']} ({row['synapses_from']}, blocks of {row['block_size']})"
    if row["tool"] == "ours":
        return f"ours, {row['path']}"
    return f"Brian2CUDA {importlib.metadata.version('brian2cuda')} (Brian2 {row['version']})"


def startup_figures(row: dict) -> list[tuple[str, float]]:
    """The start-up figures of a simulator's first row: (metric, seconds)."""
    if "gpu_generate_s" in row:
        return [
            ("weights, GPU estimate", row["gpu_generate_s"]),
            ("GPU network (W, Wᵀ)", row["network_s"]),
        ]
    if "load_s" in row:
        return [("build", row["build_s"]), ("load", row["load_s"])]
    return [("build", row["build_s"])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bin", required=True, help="the built gpu_lif_bench")
    parser.add_argument("--sizes", default="10000:0.01,100000:0.01,1000000:0.001")
    parser.add_argument(
        "--steps", type=int, help="steps per run (default: gpu_lif_bench's)"
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs")
    parser.add_argument("--warmup-runs", type=int, default=1, help="untimed runs first")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of Brian2CUDA's program"
    )
    parser.add_argument("--simulators", default="genn,brian2cuda")
    parser.add_argument(
        "--work", required=True, help="a folder for the export and builds"
    )
    parser.add_argument(
        "--genn-block-sizes",
        default="64,128,256",
        help="GeNN's thread-block sizes to try (each a build of its own)",
    )
    parser.add_argument(
        "--genn-draw-too",
        action="store_true",
        help="where GeNN gets our synapses, also measure it on synapses it draws alike",
    )
    args = parser.parse_args()
    work = Path(args.work)
    export = work / "export"
    simulators = args.simulators.split(",")
    gpu = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        check=False,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"GPU: {gpu}")

    rows = run_ours(args, export)
    for row in rows:
        print(row, flush=True)
    for n in [int(item.split(":")[0]) for item in args.sizes.split(",")]:
        meta = json.loads((export / f"n{n}.json").read_text())
        steps, warmup_runs, runs = meta["steps"], meta["warmup_runs"], meta["runs"]
        draws = [not meta["synapses_written"]]
        if args.genn_draw_too and meta["synapses_written"]:
            draws.append(True)
        block_sizes = [int(b) for b in args.genn_block_sizes.split(",")]
        for draw, block_size in product(
            draws if "genn" in simulators else [], block_sizes
        ):
            try:
                genn = GennNetwork(export, n, work / "genn", draw, block_size)
                for row in genn.measure(steps, warmup_runs, runs):
                    print(row, flush=True)
                    rows.append(row)
                del genn
            except Exception as error:  # noqa: BLE001 (a failed simulator is reported; the rest run)
                print(f"GeNN at N = {n} failed: {error!r}", file=sys.stderr, flush=True)
        if "brian2cuda" in simulators and meta["synapses_written"]:
            try:
                brian_args = argparse.Namespace(float32=True, brian_model="matched")
                started = time.perf_counter()
                brian = BrianNetwork(
                    export, n, brian_args, work / f"brian{n}", device="cuda_standalone"
                )
                build_s = time.perf_counter() - started
                for repeat in range(args.repeats):
                    row = brian.measure()
                    row["build_s"] = build_s
                    if repeat == 0:
                        row["check"] = brian.check()
                    print(row, flush=True)
                    rows.append(row)
                del brian
            except Exception as error:  # noqa: BLE001
                print(f"Brian2CUDA at N = {n} failed: {error!r}", file=sys.stderr, flush=True)

    print(f"\nGPU: {gpu}; medians over the timed runs\n")
    print(
        "| N | synapses | simulator | µs/step | synaptic events/s | rate (Hz) | start-up |"
    )
    print("|---|---|---|---|---|---|---|")
    recorder = Recorder("lif_vs_gpu_simulators", gpu=gpu_model())
    for n in sorted({r["n"] for r in rows}):
        meta = json.loads((export / f"n{n}.json").read_text())
        for label in dict.fromkeys(row_label(r) for r in rows if r["n"] == n):
            group = [r for r in rows if r["n"] == n and row_label(r) == label]
            first = group[0]
            micros = statistics.median(r["us_per_step"] for r in group)
            events = statistics.median(r["synaptic_events_per_s"] for r in group)
            rate = statistics.median(r["rate_hz"] for r in group)
            if "gpu_generate_s" in first:
                startup = (
                    f"weights {first['gpu_generate_s']:.2f} s + network "
                    f"{first['network_s']:.2f} s"
                )
            elif "load_s" in first:
                startup = (
                    f"build {first['build_s']:.1f} s + load {first['load_s']:.2f} s"
                )
            else:
                startup = f"build {first['build_s']:.1f} s"
            print(
                f"| {n} | {first['synapses']} | {label} | {micros:.2f} | {events:.3e} | "
                f"{rate:.2f} | {startup} |"
            )
            case = {
                "N": n,
                "connection": meta["connection_prob"],
                "steps": meta["steps"],
                "runs": meta["runs"],
                "warm-up runs": meta["warmup_runs"],
                "simulator": label,
            }
            recorder.figure(case, "step", micros, "µs/step")
            recorder.figure(case, "synaptic events", events, "per s")
            recorder.figure(case, "firing rate", rate, "Hz")
            for metric, seconds in startup_figures(first):
                recorder.figure(case, metric, seconds, "s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
