#!/usr/bin/env python3
"""Our CPU LIF step against Brian2 2.9.0 (cpp_standalone, one thread), on the same network.

Both simulate the network of `benches/cpu_lif_bench.rs`, built by `LifWeights::generate` and
exported by that binary (`--export`): N neurons (default 10^4 and 10^5), each receiving exactly
1 % of the others, 80 % excitatory (Dale's law), W scaled to spectral radius 2; one input
channel into 10 % of the neurons, a level uniform on [0.3, 1) held for 10 ms; bias 0.9,
tau_m 20 ms, tau_syn 5 ms, threshold 1, v_rest = v_reset = 0, R = 1, t_ref 2 ms, dt 0.1 ms.
Brian2 gets the very same synapses (created in source order, as its own `connect` makes them,
so that a spike's synapses lie together in memory), weights, input weights and input levels.

The Brian2 model, written to match our exact-integration step (crate::lif, "The step,
exactly"):

    dv/dt = (v_rest - v + R*(I_syn + I_ext)) / tau_m : 1 (unless refractory)
    I_syn : 1        # held over a step, as in ours
    I_ext : 1        # bias + w_in * u(t), set every 10 ms
    w_in : 1 (constant)

integrated with method 'exact' (v decays with tau_m towards v_rest + R*I, I constant over the
step). After the state update of each step I_syn is multiplied by exp(-dt/tau_syn) (a
`run_regularly` in the 'before_synapses' slot), then the synapses add w to I_syn of their
targets for the neurons that spiked in this step: the next step's update sees
I_syn*alpha_syn + W*s, which is our step 1 one step later, so a spike reaches its targets'
currents after one step, as in ours. Threshold `v >= theta`, reset `v = v_reset`. Refractory
period (n_ref + 1)*dt: Brian2 integrates again at the step whose index minus the spike's is
at least round(refractory/dt), ours at n_ref + 1 steps after the spike (t_ref = n_ref*dt), so
both hold v for the same n_ref steps. Brian2 computes in float64 (its default; `--float32`
for single precision) and in its own order, so the trajectories are not ours bit for bit,
but the statistics (firing rate) match. As a check of the model, the first Brian2 line of
each size carries `check`: Brian2's spikes of the first 1000 steps from rest against ours
(exported by `cpu_lif_bench`): the spikes both have and the first step where they differ,
none while rounding has not yet steered the chaotic network apart. With `--brian-model
coupled` Brian2 instead integrates dI_syn/dt = -I_syn/tau_syn jointly with v (its usual way of
writing an exponential synapse; v then sees I_syn decay within the step): a slightly
different discretisation, to check that the matched form does not slow Brian2 down.

Our step also keeps the spike traces and the spike-count window that our reservoir reports;
the Brian2 model has neither, so it does strictly less work per step.

How each is timed (the same stretch of model time):
* ours: `cpu_lif_bench` runs one warm-up run of S steps from rest and then R timed runs of S
  steps, continuing the trajectory, and reports the median wall-clock time per step of the R
  runs (`std::time::Instant`), and the firing rate of the last run. Weight generation and the
  network's construction are outside the timing.
* Brian2: the network is built once (`build_on_run=False`) with two `run()` calls, R*S steps
  (the warm-up and all but the last of our runs) and then S steps (our last run), and a
  `SpikeMonitor(record=False)` added before the second to count its spikes (the first 1000
  steps, recorded for the check, are a run of their own). Brian2 times the loop of each
  `run()` inside the compiled program with std::clock, the process's CPU time: its wall-clock
  time on one thread, less any time other processes took the core (so other work on the
  machine slows ours more than Brian2's figure). It reports the last in
  `device._last_run_time`: compilation, loading the synapses, building the spike queue and
  writing the results are outside it. The compiled program is run `--repeats` times
  (`device.run`); the median is reported.
With `--rounds K`, both are measured K times, alternating, and medians (with the range) are
reported, since other work on the machine adds noise.

Set-up (Python 3.11 or later; the C++ compiler g++ must be installed; NumPy below 2.4, whose
ndarray lost the `ptp` method that Brian2 2.9.0 wraps):

    python3 -m venv /tmp/brianenv && /tmp/brianenv/bin/pip install brian2==2.9.0 "numpy<2.4"
    /tmp/brianenv/bin/python benches/python/lif_vs_brian2.py [--sizes 10000,100000]

It builds `cpu_lif_bench` with cargo (skip with `--no-build`), exports the networks to a
temporary folder (1.6 GB at N = 10^5), prints a line per measurement, then a table of the
medians and their JSON lines (`records.py`). `--threads 1,2` adds our step split over two
threads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from records import Recorder, by_case, read_records

REPO = Path(__file__).resolve().parents[2]


def cpu_info(*keys: str) -> str:
    """Fields of the first CPU in /proc/cpuinfo: its model name, family, model, stepping."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return ""
    fields = {}
    for line in first.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    parts = [fields[k] if k == "model name" else f"{k} {fields[k]}" for k in keys if k in fields]
    return ", ".join(parts)


def run_ours(binary: Path, n: int, args: argparse.Namespace, export: Path | None) -> list[dict]:
    """Runs `cpu_lif_bench` for size n and returns a row per thread count."""
    command = [str(binary), "--sizes", str(n), "--runs", str(args.runs)]
    command += ["--threads", args.threads]
    if args.steps:
        command += ["--steps", str(args.steps)]
    if export is not None:
        command += ["--export", str(export)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return [
        {
            "n": case["N"],
            "connection": case["connection"],
            "threads": case["threads"],
            "steps": case["steps"],
            "us_per_step": figures["step"],
            "rate_hz": figures["firing rate"],
        }
        for case, figures in by_case(read_records(out))
    ]


class BrianNetwork:
    """The exported network of size n, compiled once by Brian2's cpp_standalone device (or
    Brian2CUDA's cuda_standalone)."""

    def __init__(
        self,
        folder: Path,
        n: int,
        args: argparse.Namespace,
        build: Path,
        device: str = "cpp_standalone",
    ):
        import brian2 as b2

        if device == "cuda_standalone":
            import brian2cuda  # noqa: F401  (registers the device)

        self.b2 = b2
        self.device = device
        meta = json.loads((folder / f"n{n}.json").read_text())
        self.meta = meta
        b2.device.reinit()
        b2.device.activate()
        b2.set_device(device, directory=str(build), build_on_run=False)
        b2.prefs.reset_to_defaults()
        b2.prefs.devices.cpp_standalone.openmp_threads = 0
        if device == "cuda_standalone":
            # CUDA 13's Thrust and CUB need C++17; Brian2's default flags ask for C++11.
            gcc = b2.prefs.codegen.cpp.extra_compile_args_gcc
            b2.prefs.codegen.cpp.extra_compile_args_gcc = [
                "-std=c++17" if flag == "-std=c++11" else flag for flag in gcc
            ]
        if args.float32:
            b2.prefs.core.default_float_dtype = np.float32
        ms = b2.ms
        dt = meta["dt_ms"] * ms
        b2.defaultclock.dt = dt
        steps, hold = meta["steps"], meta["hold_steps"]
        # Runs before the timed one: the warm-up runs and all but the last timed run.
        runs = meta.get("warmup_runs", 1) + meta["runs"] - 1
        k = meta["input_size"]
        if k != 1:
            raise SystemExit("the script drives one input channel")
        levels = np.fromfile(folder / f"n{n}_u.f64", dtype="<f8")
        namespace = {
            "v_rest": meta["v_rest"],
            "v_reset": meta["v_reset"],
            "theta": meta["threshold"],
            "R": meta["resistance"],
            "tau_m": meta["tau_m_ms"] * ms,
            "tau_syn": meta["tau_syn_ms"] * ms,
            "alpha_syn": float(np.exp(-meta["dt_ms"] / meta["tau_syn_ms"])),
            "bias": meta["bias"],
            "u_levels": b2.TimedArray(levels, dt=hold * dt),
        }
        if args.brian_model == "matched":
            equations = """
                dv/dt = (v_rest - v + R*(I_syn + I_ext)) / tau_m : 1 (unless refractory)
                I_syn : 1
                I_ext : 1
                w_in : 1 (constant)
            """
        else:
            equations = """
                dv/dt = (v_rest - v + R*(I_syn + I_ext)) / tau_m : 1 (unless refractory)
                dI_syn/dt = -I_syn / tau_syn : 1
                I_ext : 1
                w_in : 1 (constant)
            """
        group = b2.NeuronGroup(
            n,
            equations,
            threshold="v >= theta",
            reset="v = v_reset",
            refractory=(meta["refractory_steps"] + 1) * dt,
            method="exact",
            namespace=namespace,
        )
        group.v = meta["v_rest"]
        group.w_in = np.fromfile(folder / f"n{n}_w_in.f64", dtype="<f8")
        group.run_regularly("I_ext = bias + w_in * u_levels(t)", dt=hold * dt, when="start")
        if args.brian_model == "matched":
            group.run_regularly("I_syn = I_syn * alpha_syn", when="before_synapses")
        synapses = b2.Synapses(group, group, "w : 1 (constant)", on_pre="I_syn_post += w")
        # Synapses in source order, as Brian2's own `connect` creates them: a spike's
        # synapses then lie together in memory (in W's row order they are N/in-degree apart).
        pre = np.fromfile(folder / f"n{n}_pre.u32", dtype="<u4").astype(np.int32)
        order = np.argsort(pre, kind="stable")
        post = np.fromfile(folder / f"n{n}_post.u32", dtype="<u4").astype(np.int32)
        synapses.connect(i=pre[order], j=post[order])
        del pre, post
        synapses.w = np.fromfile(folder / f"n{n}_w.f64", dtype="<f8")[order]
        del order
        # The spikes of the first steps, to check the model against ours; then the warm-up
        # and all but our last run; then the timed run, its spikes counted.
        self.check_steps = min(meta["check_steps"], runs * steps)
        self.recorder = b2.SpikeMonitor(group)
        network = b2.Network(group, synapses, self.recorder)
        network.run(self.check_steps * dt)
        network.remove(self.recorder)
        network.run((runs * steps - self.check_steps) * dt)
        self.monitor = b2.SpikeMonitor(group, record=False)
        network.add(self.monitor)
        network.run(steps * dt)
        pairs = np.fromfile(folder / f"n{n}_spikes.u32", dtype="<u4").reshape(-1, 2)
        self.ours_first = pairs[pairs[:, 0] < self.check_steps]
        b2.device.build(directory=str(build), compile=True, run=False)
        self.build = build

    def check(self) -> dict:
        """Brian2's first spikes against ours, after a measurement: the first step whose
        spikes differ (none where the two compute the same model; the float64 and float32
        trajectories of a chaotic network part after a while) and the spikes both have."""
        steps = np.rint(np.asarray(self.recorder.t / self.b2.defaultclock.dt)).astype(np.int64)
        theirs = set(zip(steps.tolist(), np.asarray(self.recorder.i).tolist()))
        ours = set(map(tuple, self.ours_first.astype(np.int64).tolist()))
        differ = [t for t, _ in theirs ^ ours]
        return {
            "check_steps": self.check_steps,
            "spikes_ours": len(ours),
            "spikes_brian2": len(theirs),
            "spikes_in_both": len(ours & theirs),
            "first_differing_step": min(differ) if differ else None,
        }

    def measure(self) -> dict:
        """Runs the compiled program once: µs per step and rate of the timed run."""
        b2, meta = self.b2, self.meta
        b2.device.run(directory=str(self.build), with_output=False)
        steps = meta["steps"]
        seconds = float(b2.device._last_run_time)
        spikes = int(self.monitor.num_spikes)
        model_s = steps * meta["dt_ms"] * 1e-3
        return {
            "tool": f"Brian2 {self.device}",
            "version": b2.__version__,
            "n": meta["n"],
            "synapses": meta["synapses"],
            "threads": 1,
            "steps": steps,
            "us_per_step": seconds * 1e6 / steps,
            "rate_hz": spikes / meta["n"] / model_s,
            "synaptic_events_per_s": spikes * meta["synapses"] / meta["n"] / seconds,
            "spikes": spikes,
        }


def summary(rows: list[dict]) -> tuple[float, float, float, float]:
    """Median µs/step with its range, and the median rate."""
    micros = [r["us_per_step"] for r in rows]
    rates = [r["rate_hz"] for r in rows]
    return statistics.median(micros), min(micros), max(micros), statistics.median(rates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--steps", type=int, help="steps per run (default: cpu_lif_bench's)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of ours")
    parser.add_argument("--threads", default="1", help="our step's threads, e.g. 1,2")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the Brian2 program")
    parser.add_argument("--rounds", type=int, default=1, help="alternating measurements")
    parser.add_argument("--float32", action="store_true", help="Brian2 in single precision")
    parser.add_argument("--brian-model", choices=["matched", "coupled"], default="matched")
    parser.add_argument("--no-build", action="store_true", help="use the built binary")
    parser.add_argument("--target-dir", default=str(REPO / "target"))
    args = parser.parse_args()

    import brian2

    if brian2.__version__ != "2.9.0":
        print(f"note: Brian2 {brian2.__version__}, not 2.9.0", file=sys.stderr)
    if not args.no_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "reservoir-benches", "--bin", "cpu_lif_bench"],
            cwd=REPO,
            check=True,
        )
    binary = Path(args.target_dir) / "release" / "cpu_lif_bench"
    sizes = [int(s) for s in args.sizes.split(",")]
    described = cpu_info("model name", "cpu family", "model", "stepping")
    print(f"CPU: {described} ({os.cpu_count()} logical CPUs); Python {platform.python_version()}")
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout
    print(f"Brian2 {brian2.__version__}, {gxx.splitlines()[0] if gxx else 'g++ not found'}")

    ours: list[dict] = []
    theirs: list[dict] = []

    def show(rows: list[dict], into: list[dict]) -> None:
        for row in rows:
            print(", ".join(f"{key} {value}" for key, value in row.items()), flush=True)
        into.extend(rows)

    # One size at a time (Brian2's standalone device holds one project), alternating ours and
    # Brian2's compiled program round by round.
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="lif_vs_brian2_") as tmp:
            folder = Path(tmp)
            show(run_ours(binary, n, args, folder / "export"), ours)
            network = BrianNetwork(folder / "export", n, args, folder / "brian")
            checked = False
            for path in (folder / "export").iterdir():
                if path.suffix in (".u32", ".f64"):
                    path.unlink()
            for round_index in range(args.rounds):
                if round_index > 0:
                    show(run_ours(binary, n, args, None), ours)
                for _ in range(args.repeats):
                    row = network.measure()
                    if not checked:
                        row["check"] = network.check()
                        checked = True
                    row["model"] = args.brian_model
                    row["float"] = "float32" if args.float32 else "float64"
                    show([row], theirs)
            del network

    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"\nCPU: {described}; medians (range) over {args.rounds} round(s)\n")
    print("| N | simulator | threads | µs/step | rate (Hz) | runs | Brian2's µs/step ÷ this |")
    print("|---|---|---|---|---|---|---|")
    recorder = Recorder("lif_vs_brian2")
    for n in sizes:
        label = f"Brian2 {brian2.__version__} cpp_standalone ({args.brian_model}, "
        label += "float32)" if args.float32 else "float64)"
        groups = [(label, [r for r in theirs if r["n"] == n])]
        for threads in sorted({r["threads"] for r in ours if r["n"] == n}):
            rows = [r for r in ours if r["n"] == n and r["threads"] == threads]
            groups.append(("ours, LifNetwork::step", rows))
        brian_median = summary(groups[0][1])[0]
        for name, rows in groups:
            median, low, high, rate = summary(rows)
            threads = rows[0]["threads"]
            print(
                f"| {n} | {name} | {threads} | {median:.2f} ({low:.2f}–{high:.2f}) | "
                f"{rate:.2f} | {len(rows)} | {brian_median / median:.2f} |"
            )
        connection = groups[-1][1][0]["connection"]
        for name, rows in groups:
            median, _, _, rate = summary(rows)
            case = {
                "N": n,
                "connection": connection,
                "steps": rows[0]["steps"],
                "simulator": name,
                "threads": rows[0]["threads"],
            }
            recorder.figure(case, "step", median, "µs/step")
            recorder.figure(case, "firing rate", rate, "Hz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
