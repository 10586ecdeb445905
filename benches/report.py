#!/usr/bin/env python3
"""Merges benchmark figures into benches/results.jsonl and writes docs/benchmarks.md from it.

Every benchmark program (the binaries of `benches/`, the Python scripts of `benches/` and
`benches/python/`, `benches/fit_1m.sh`) prints, beside its tables, one JSON object per line
for every figure it measures:

    {"bench": "gpu_bench", "case": {"N": 1000, "density": 1, "W": "f32", "path": "..."},
     "metric": "step", "value": 1.35, "unit": "µs/step", "gpu": "NVIDIA H100 80GB HBM3",
     "cpu": "Intel(R) Xeon(R) Processor, 16 cores", "command": "target/release/gpu_bench"}

- `bench`: the program's name; `case`: the parameters of what was measured (numbers or text);
  `metric`, `value` (a number; the programs round it to 4 significant digits) and `unit`
  (empty for a count or a ratio).
- `gpu`: the model name of the GPU the program ran on, as the driver reports it, or null when
  it used none; `cpu`: the host's CPU model from /proc/cpuinfo's "model name" and its number
  of logical CPUs, or null where a figure's record did not name it.
- `command`: the command line that repeats the figure, from the repository root, after
  `cargo build --release -p reservoir-benches --bins -p reservoir-cli`.

The store keeps one record per (bench, case, metric, gpu, cpu): a new record replaces the
stored one with the same key, so the page shows the newest figure of every case on every
device. Lines that are not JSON objects are skipped; a JSON object that is not such a record
is an error.

    python3 benches/report.py [FILE|- ...]   # merge the records of the files (- : stdin)
                                             # into the store, then write the page
    python3 benches/report.py --check        # fail if the page differs from the store's

Python standard library only.
"""

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STORE = REPO / "benches" / "results.jsonl"
PAGE = REPO / "docs" / "benchmarks.md"
FIELDS = ("bench", "case", "metric", "value", "unit", "gpu", "cpu", "command")
BUILD = "cargo build --release -p reservoir-benches --bins -p reservoir-cli"

# Every benchmark program: its title, what it measures and how to run it. A record of a
# program not listed here is an error, so that every section of the page says what it shows.
BENCHES = {
    "gpu_bench": (
        "Echo-state step on one GPU",
        (
            "One sequence on each step path the reservoir can take (the cluster kernel, the "
            "persistent kernel with W on chip or streamed, in f32 or rounded to 16 bits) next to "
            "two baselines in the same process (a fused kernel launched every step; cuBLAS SGEMV "
            "and an elementwise kernel), with the bytes of W read per step and the floor those "
            "bytes set at the measured copy bandwidth; batches of B sequences through one "
            "reservoir (a cuBLAS GEMM and an elementwise launch per step in f32, TF32 or f16, as "
            "launches and replayed from a CUDA graph, and the tensor-core run); many sequences "
            "through `run_many` as a caller gets them (states back on the host). µs per step "
            "from CUDA events after a warm-up, median of 5 (3 for the baselines); start-up "
            "apart."
        ),
        (
            "`target/release/gpu_bench` (`--batched-only`: the batched tables; `--many-only`: "
            "`run_many`; `--case=N`: the single-sequence cases of size N; `--tensor-core-only`: "
            "the tensor-core run at N = 1000, B = 64 and 512)"
        ),
    ),
    "pytorch_esn": (
        "PyTorch's echo-state step on the same GPU",
        (
            "The leaky step x ← (1 − a)x + a·tanh(Wx + u) with a dense W in PyTorch: an eager "
            "loop, CUDA-graph replays of 100 steps, and the product W·x alone (`torch.mm` in a "
            "CUDA graph, the floor of any loop that calls the library's GEMM once a step); one "
            "sequence (B = 1) and batches, in f32 and all in f16. Run in the same command as "
            "`gpu_bench` to compare on one GPU."
        ),
        "`python3 benches/pytorch_esn.py` (needs PyTorch with CUDA)",
    ),
    "gpu_sweep_bench": (
        "A sweep's lanes on the GPU",
        (
            "B echo-state lanes sharing one W (`GpuLaneRunner`): the recurrence as `run_lanes` "
            "runs it (replayed from a CUDA graph, or the tensor-core run's one launch) and as "
            "plain launches, the lanes' ridge sums, copying a set of sums back, and a whole "
            "`run_lanes` over 10,000 NARMA-10 steps; the CPU lane runner on 4 lanes on one thread "
            "in the same process; each GEMM arithmetic (f32, TF32, f16) and the tensor-core run "
            "with the validation NRMSE of its lanes against the CPU's; with two GPUs or more, "
            "256 lanes into scores on GPU 0 and on every GPU (`MultiGpuLaneRunner`)."
        ),
        (
            "`target/release/gpu_sweep_bench` (`--math-only`: the arithmetic table; "
            "`--multi-only`: the several-GPU table)"
        ),
    ),
    "gpu_startup_bench": (
        "What a user waits for outside the kernels",
        (
            "Start-up from process start to the first kernel's states, phase by phase, with an "
            "empty and with a warm kernel cache; the latency of one `process_gpu` call (a "
            "100-bin pattern over 40 channels, p50 and p99 of 1,000 calls) beside the CPU; "
            "100,000 steps at N = 1000 brought back through `run` and `run_into_f32` against the "
            "kernel alone plus the states' bytes over the measured page-locked copy bandwidth."
        ),
        (
            "`target/release/gpu_startup_bench`, twice with the same `RESERVOIR_KERNEL_CACHE` "
            "folder (the first run fills it)"
        ),
    ),
    "gpu_lif_bench": (
        "The LIF reservoir on the GPU",
        (
            "The LIF network of 10⁴ and 10⁵ neurons at 1 % (and any `--sizes N:p`): the "
            "event-driven step (two launches a step), the gather step and, where the device has "
            "thread-block clusters and N ≤ 32,768, a whole run in one cluster launch, next to "
            "the CPU `LifNetwork` on one core in the same process, on the same weights and "
            "inputs (the paths' last runs must hold the same spikes); the cluster run with no "
            "input (its fixed cost); the start-up: weights with the CPU's and with the GPU's "
            "spectral estimate (checked equal) and the network made on the device; the path "
            "rule's sizes (2000 steps × 5 runs). µs per step from CUDA events, median of the "
            "timed runs after the warm-up runs."
        ),
        (
            "`target/release/gpu_lif_bench` (`--sizes N:p,...`, `--steps S`, `--runs R`, "
            "`--warmup-runs W`, `--gpu-only`; without a GPU it measures the CPU rows)"
        ),
    ),
    "gpu_spread_bench": (
        "Work spread over several GPUs",
        (
            "Through NCCL, each figure next to the same work on one GPU in the same process: a "
            "many-sequence classifier (`fit_classifier`, 100,000 sequences of 100 steps, "
            "N = 500); a dense reservoir sharded over the GPUs (`ShardedReservoir`) against "
            "`GpuReservoirComputer`, µs per step of `run` with the states copied back and the "
            "all-gather of the state alone; the LIF network split over the GPUs "
            "(`ShardedLifNetwork`), whole runs and the steps alone. Needs two GPUs or more."
        ),
        (
            "`target/release/gpu_spread_bench [fit|sharded|lif|all]` (`--sequences S`, "
            "`--repeats R`, `--sizes N,N`, `--density D`, `--lif-sizes N:P,N:P`; needs "
            "`libnccl.so` on the library path)"
        ),
    ),
    "fit_1m": (
        "`reservoir fit` on a million rows",
        (
            "The whole `reservoir fit` process on 1,000,000 rows of NARMA-10 with N = 1000 "
            "(`benches/fit_1m.toml`) on the GPU (states and XᵀX stay on the device) and on the "
            "CPU: wall time, the report's `fit_seconds` (weights, spectral radius, run, ridge) "
            "and the test NRMSE, which the two devices must share."
        ),
        "`bash benches/fit_1m.sh [BIN_DIR] [--skip-cpu]`",
    ),
    "cpu_bench": (
        "The echo-state reservoir on the CPU",
        (
            "The sparse product of every kernel this CPU has (the library times them and keeps "
            "the fastest), `Reservoir::run` in f32 with each kernel on one thread and on all, and "
            "the fit of the ReservoirPy comparison through the library (N = 1000, 10 %, "
            "10,000 steps, weights to readout). Medians of the repeats."
        ),
        "`target/release/cpu_bench [--repeat R]`",
    ),
    "cpu_lif_bench": (
        "The LIF step on the CPU",
        (
            "`LifNetwork::step` on the network of `gpu_lif_bench` at 1 %: median wall-clock µs "
            "per step of the timed runs after a warm-up run, on one thread and split over "
            "several by neuron range; the firing rate and synaptic events per second."
        ),
        ("`target/release/cpu_lif_bench [--sizes N,...] [--steps S] [--runs R] [--threads T,...]`"),
    ),
    "compare_reservoirpy": (
        "`reservoir fit` against ReservoirPy",
        (
            "One echo-state fit, N = 1000, 10 % connected, 10,000 steps of Mackey–Glass, from "
            "the weights to the fitted readout, by ReservoirPy and by our `reservoir fit` on the "
            "same machine in the same run (median of the repeats after a warm-up), with the "
            "training NRMSE of each."
        ),
        (
            "`python3 benches/compare_reservoirpy.py [--repeats R]` (needs "
            "`pip install reservoirpy==0.4.2`)"
        ),
    ),
    "package_vs_reservoirpy": (
        "The Python package against ReservoirPy",
        (
            "ReservoirPy and our Python package in one process on the same data and "
            "hyper-parameters, from building the reservoir to the last test prediction: a "
            "NARMA-10 series (fit on 10,000 steps, test NRMSE) and the classification of many "
            "synthetic sequences by their last state (test accuracy)."
        ),
        (
            "`python3 benches/python/package_vs_reservoirpy.py [--repeat R]` (with the package "
            "installed and `benches/python/requirements.txt`)"
        ),
    ),
    "nvar_vs_reservoirpy": (
        "NVAR against ReservoirPy",
        (
            "ReservoirPy's `NVAR >> Ridge` and our `reservoir.NVAR` with `Readout.ridge` in one "
            "process on the same series and hyper-parameters: one-step-ahead forecasts of "
            "Lorenz-63 and Mackey–Glass, from building the NVAR to the last test prediction "
            "(fit on the training series, the NVAR continued over the test series), the test "
            "NRMSE, and the largest difference between the two tools' features."
        ),
        (
            "`python3 benches/python/nvar_vs_reservoirpy.py [--repeat R]` (with the package "
            "installed and `pip install reservoirpy==0.4.2`)"
        ),
    ),
    "model_kinds": (
        "Model kinds on the time-series tasks",
        (
            "`reservoir run` on the shipped configs, each over 5 seeds of the weights (the "
            "task's data the same): Mackey–Glass one-step test NRMSE and 84-step closed-loop "
            "NRMSE84 for one echo-state network of 600 units, a deep stack of three 200-unit "
            "layers with the input beside their states (configs/deep_mackey_glass.toml) and NVAR "
            "(configs/nvar_mackey_glass.toml, no weights, so no spread over seeds); NARMA-10 "
            "test NRMSE for the 500-unit network of configs/narma10.toml with and without "
            "intrinsic plasticity and the input link (configs/plasticity_narma10.toml). Mean "
            "and std over the seeds."
        ),
        "`python3 benches/python/model_kinds.py [--seeds 5]` (after `cargo build --release -p reservoir-cli`)",
    ),
    "ngrc_forecast": (
        "Next-generation reservoir computing: closed-loop forecasts",
        (
            "Gauthier et al.'s (Nature Communications 2021) forecasting set-ups with our "
            "`reservoir.NVAR` and `Readout.ridge`: Lorenz-63 (k = 2, linear and quadratic "
            "features and a constant, ridge 2.5e-6, 10 time units of training) and the "
            "double-scroll circuit (k = 2, linear and cubic features, ridge 1e-3), the readout "
            "predicting the increment and run closed-loop from the last training point. Valid "
            "prediction time (normalised error above 0.3) in Lyapunov times and the paper's "
            "NRMSE over one Lyapunov time, mean and std over 10 seeded trajectories, on two "
            "ground truths: an accurate RK4 and scipy's RK23 at default tolerances, which the "
            "paper's code integrates with. On accurate Lorenz-63 data the paper's ridge gives a "
            "closed loop that diverges; its figures hold on the RK23 data. For Lorenz-63 the "
            "engine's own closed loop (`ESNRegressor(kind=\"nvar\", increments=True)` and "
            "`generate`) is run beside the hand-written one: the two agree to about 1e-8 at the "
            "first step (their ridge solves round differently), which the chaos amplifies, so "
            "their VPTs differ trial by trial. The paper's own code (github.com/quantinfo/"
            "ng-rc-paper-code at 410de8c, NumPy 2.4.6, SciPy 1.17.1, on the 2-core AMD EPYC; "
            "its trials are 10 segments of one RK23 trajectory, mean ± std/√10) gives "
            "Lorenz-63 training NRMSE 1.046e-4 ± 3.4e-6 and NRMSE over one Lyapunov time "
            "2.11e-3 ± 4.4e-4 (`python LorenzConstLinQuadraticNVARtimedelayNRMSE-RK23.py`), "
            "and for the double scroll 1.166e-3 ± 2.8e-5 and 7.43e-3 ± 3.7e-3 "
            "(`DoubleScrollNVAR-RK23.py`, its plot left out and `fsolve`'s result taken as a "
            "scalar for NumPy 2)."
        ),
        "`python3 benches/python/ngrc_forecast.py` (with the package installed, and scipy)",
    ),
    "sequence_representations": (
        "Sequence classification by representation",
        (
            "Every representation of a sequence's states on the bundled real datasets "
            "(examples/data: Japanese Vowels, handwritten digits, BasicMotions, Epilepsy), each "
            "given the same search: `reservoir sweep` over spectral radius, leak rate, input "
            "scaling and ridge on 5 stratified folds of the training sequences (the grid of the "
            "dataset's sweep.toml), the best refitted on every training sequence and scored "
            "once on the test file. N = 500. For reference, Fawaz et al. (2019) report TWIESN "
            "at 0.965 on Japanese Vowels."
        ),
        (
            "`python3 benches/python/sequence_representations.py` (after `cargo build "
            "--release -p reservoir-cli`)"
        ),
    ),
    "representation_speed": (
        "Sequence representations: what they cost",
        (
            "`reservoir fit` on synthetic sequences (8 channels, 5 classes, the set of "
            "sequences_vs_reservoirpy.py; N = 500 as benches/python/esn500.toml) with each "
            "representation: `fit_seconds` (from the weights to the last test prediction: the "
            "runs, any projection's fit, the features and the one-hot readout's solve) and its "
            "ratio to the last state's. The model space gives the readout d² + d features: 930 "
            "with 30 components, 5,700 with 75, and the one-hot readout's sums (made on the "
            "host) grow with the square of that width. A GPU projects the states "
            "and solves each sequence's model on the device; a CPU summarizes each block of "
            "sequences on the thread that ran it."
        ),
        (
            "`python3 benches/python/sequence_representations.py --speed 10000,100 "
            "[--device cpu|cuda] [--repeat R]`"
        ),
    ),
    "many_sequences_job": (
        "The many-sequence classifier job on every device of a host",
        (
            "`reservoir fit --config benches/python/esn500.toml` (N = 500, last state) on "
            "synthetic .npz files of B training and B/4 test sequences (`data`: B,T,K,C) on "
            "`cuda`, `cpu`, `auto` and `cuda` with `--gpu-matmul f16`: `fit_seconds` (weights "
            "to the last test prediction; the GPU opens while the files are read), the seconds "
            "reading the files and the process's wall time, median of the repeats; the same "
            "training set from Python (`ESNClassifier`, arrays in memory): the process's first "
            "fit (it opens the GPU) and a second; and a first GPU run on a fresh machine (empty "
            "kernel cache, the driver's own cache off) against a warm one."
        ),
        (
            "`python3 benches/python/many_sequences_job.py --reservoir-bin "
            "target/release/reservoir [--synthetic B,T,K,C] [--repeat R]` (with the package "
            "installed for the Python part)"
        ),
    ),
    "sequences_vs_reservoirpy": (
        "Sequence classification against ReservoirPy",
        (
            "ReservoirPy classifying whole sequences the way its tutorials do (the last state of "
            "each sequence, a ridge readout on one-hot labels) and our `reservoir fit` on the "
            "same files in the same run: the whole fit and test prediction (not reading the "
            "data), and the accuracies."
        ),
        ("`python3 benches/python/sequences_vs_reservoirpy.py` (see `benches/python/README.md`)"),
    ),
    "lif_vs_brian2": (
        "The LIF step against Brian2",
        (
            "Our CPU LIF step (`cpu_lif_bench`) and Brian2 in `cpp_standalone` mode on one "
            "thread, on the very same network (our weights, exported), medians over the rounds; "
            "the firing rates must agree for the step times to compare."
        ),
        "`python3 benches/python/lif_vs_brian2.py` (set-up: its docstring)",
    ),
    "lif_vs_gpu_simulators": (
        "The GPU LIF step against GeNN and Brian2CUDA",
        (
            "Our GPU step (`gpu_lif_bench --gpu-only`), GeNN (a custom neuron model that is our "
            "step) and Brian2CUDA on the same GPU in one command, on the very same synapses "
            "(or, above 2·10⁸ synapses, GeNN drawing its own alike), medians of the timed runs, "
            "with each simulator's start-up."
        ),
        (
            "`python3 benches/python/lif_vs_gpu_simulators.py --bin target/release/gpu_lif_bench "
            "--work DIR` (set-up of GeNN and Brian2CUDA: its docstring)"
        ),
    ),
}


class Problem(Exception):
    """A record or a file that cannot be used, with where it came from."""


def canonical(number):
    """A whole float as an int (the Rust and Python writers print 1 and 1.0 for the same
    parameter), any other number as it is."""
    if isinstance(number, float) and number.is_integer():
        return int(number)
    return number


def checked(record, origin):
    """`record` with its case's numbers made canonical, or a Problem naming `origin`."""
    if set(record) != set(FIELDS):
        raise Problem(f"{origin}: the fields are {sorted(record)}, not {sorted(FIELDS)}")
    texts = ("bench", "metric", "unit", "command")
    if not all(isinstance(record[field], str) for field in texts):
        raise Problem(f"{origin}: {', '.join(texts)} must be text")
    if not all(record[field] is None or isinstance(record[field], str) for field in ("gpu", "cpu")):
        raise Problem(f"{origin}: gpu and cpu must be text or null")
    value = record["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Problem(f"{origin}: the value must be a finite number")
    case = record["case"]
    if not isinstance(case, dict) or not all(
        isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in case.values()
    ):
        raise Problem(f"{origin}: the case must be an object of numbers and text")
    if record["bench"] not in BENCHES:
        raise Problem(f"{origin}: unknown bench {record['bench']!r} (add it to BENCHES)")
    fixed = {field: record[field] for field in FIELDS}
    fixed["case"] = {key: canonical(v) for key, v in case.items()}
    return fixed


def key(record):
    """What a newer record of the same figure shares with the stored one."""
    case = json.dumps(record["case"], sort_keys=True, ensure_ascii=False)
    return (record["bench"], case, record["metric"], record["gpu"], record["cpu"])


def read_lines(lines, name):
    """The records among `lines` (JSON objects; other lines are skipped)."""
    records = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(checked(record, f"{name}:{number}"))
    return records


def read_file(path):
    """The records of `path`, or of standard input for `-`."""
    if path == "-":
        return read_lines(sys.stdin, "stdin")
    try:
        with open(path, encoding="utf-8") as f:
            return read_lines(f, path)
    except OSError as e:
        raise Problem(f"cannot read {path}: {e}") from e


def merge(store, records):
    """`store` with each of `records` replacing the stored record of its key, or appended."""
    merged = {key(r): r for r in store}
    for record in records:
        merged[key(record)] = record
    return list(merged.values())


def number(value):
    """A figure as the page shows it: below 10⁷ whole numbers with thousands separators and
    others in the shortest form that reads back the same; very large and very small ones as
    `1.13e8`."""
    value = canonical(value)
    if 1e-3 <= abs(value) < 1e7:
        return f"{value:,}" if isinstance(value, int) else repr(value)
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def cell(value):
    """A table cell: a figure, or text with its pipes escaped."""
    text = value if isinstance(value, str) else number(value)
    return text.replace("|", "\\|")


def param(value):
    """A case parameter as a table cell: numbers as written (N = 4096, not 4,096)."""
    return cell(value if isinstance(value, str) else str(canonical(value)))


def device_heading(gpu, cpu):
    """The heading of one device's figures: the GPU and its host's CPU, or the CPU."""
    if gpu is None:
        return f"### {cpu}"
    return f"### {gpu} (host CPU: {cpu or 'not recorded'})"


def table(heads, rows):
    """A Markdown table."""
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def labelled(metric, unit):
    """A metric with its unit, as a column heading."""
    return cell(f"{metric} ({unit})" if unit else metric)


def tables(records):
    """Markdown tables of one bench's records on one device, in the store's order: one per
    set of case parameters, a row per case and a column per metric. Where the set holds one
    metric and its last parameter is a label of a few values (a path, a mode, a kernel), the
    rows are the other parameters and the columns those values."""
    shapes = {}
    for record in records:
        shape = shapes.setdefault(tuple(record["case"]), {})
        row = shape.setdefault(key(record)[1], (record["case"], {}))
        row[1][(record["metric"], record["unit"])] = record["value"]
    out = []
    for params, rows in shapes.items():
        metrics = list(dict.fromkeys(m for _, figures in rows.values() for m in figures))
        last = params[-1]
        labels = list(dict.fromkeys(case[last] for case, _ in rows.values()))
        if (
            len(metrics) == 1
            and len(params) > 1
            and 1 < len(labels) <= 6
            and all(isinstance(label, str) for label in labels)
        ):
            metric = metrics[0]
            pivot = {}
            for case, figures in rows.values():
                cells = pivot.setdefault(tuple(param(case[p]) for p in params[:-1]), {})
                cells[case[last]] = cell(figures[metric])
            out += [f"{labelled(*metric)} by {last}:", ""]
            heads = [cell(p) for p in params[:-1]] + [cell(label) for label in labels]
            body = [
                list(k) + [cells.get(label, "") for label in labels] for k, cells in pivot.items()
            ]
            out += table(heads, body)
            continue
        heads = [cell(p) for p in params] + [labelled(*m) for m in metrics]
        body = [
            [param(case[p]) for p in params] + [cell(f[m]) if m in f else "" for m in metrics]
            for case, f in rows.values()
        ]
        out += table(heads, body)
    return out


def render(store):
    """The page written from the store."""
    intro = __doc__.split("\n\n")
    lines = [
        "# Benchmarks",
        "",
        (
            "The newest figure of every benchmark case on every device it ran on, written by "
            "`benches/report.py` from `benches/results.jsonl`: do not edit this page by hand. "
            "Every figure was measured by the program of its section, with the command listed "
            "under its tables, on the GPU and CPU named in the heading above it. Build the "
            f"programs with `{BUILD}`; commands run from the repository root."
        ),
        "",
        "## How the figures get here",
        "",
        *"\n\n".join(intro[1:6]).splitlines(),
        "",
        (
            "Designs that were measured and not kept are in [decisions.md](decisions.md); how "
            "the GPU kernels work is in [gpu.md](gpu.md)."
        ),
        "",
        "## Contents",
        "",
    ]
    present = [b for b in BENCHES if any(r["bench"] == b for r in store)]
    for bench in present:
        lines.append(f"- [{BENCHES[bench][0]}](#{bench}) (`{bench}`)")
    lines.append("")
    for bench in present:
        title, what, command = BENCHES[bench]
        lines += [f"## {bench}", "", f"**{title}.** {what}", "", f"Run: {command}.", ""]
        mine = [r for r in store if r["bench"] == bench]
        devices = sorted(
            {(r["gpu"], r["cpu"]) for r in mine},
            key=lambda d: (d[0] is None, d[0] or "", d[1] is None, d[1] or ""),
        )
        for gpu, cpu in devices:
            here = [r for r in mine if (r["gpu"], r["cpu"]) == (gpu, cpu)]
            lines += [device_heading(gpu, cpu), "", *tables(here)]
            commands = list(dict.fromkeys(r["command"] for r in here))
            lines.append("Measured with " + "; ".join(f"`{c}`" for c in commands) + ".")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def write_store(store, path):
    """One record per line, fields in the order of the format."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in store)
    path.write_text(text, encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="*", help="files of JSON lines to merge (- : stdin)")
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    parser.add_argument("--store", type=Path, default=STORE)
    parser.add_argument("--page", type=Path, default=PAGE)
    args = parser.parse_args()
    try:
        store = read_file(str(args.store)) if args.store.exists() else []
        if args.check:
            if args.files:
                raise Problem("--check reads the store only")
            current = args.page.read_text(encoding="utf-8") if args.page.exists() else ""
            if current != render(store):
                raise Problem(
                    f"{args.page} is not what {args.store} gives: run "
                    "`python3 benches/report.py` and commit the page"
                )
            return 0
        for name in args.files:
            store = merge(store, read_file(name))
        write_store(store, args.store)
        args.page.write_text(render(store), encoding="utf-8")
    except (Problem, OSError) as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
