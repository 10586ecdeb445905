#!/usr/bin/env python3
"""Head-to-head: our `reservoir fit` against ReservoirPy 0.4.2, same machine, same run, same data.

Protocol: N = 1000 units, 10 % connected recurrent matrix, input connectivity
0.1, spectral radius 0.95, leak rate 0.3, T = 10,000 steps of a 1-D Mackey–Glass series (made by
`reservoir generate mackey-glass`), ridge 1e-6, no washout. Timed: reservoir + ridge fit INCLUDING
set-up (weight generation, spectral radius, run, ridge). Also timed: ReservoirPy's `Reservoir.run`
alone on a fresh, initialised reservoir. NRMSE = RMSE / population std of the target, on the
training rows, computed here for ReservoirPy (not its range-normalised `nrmse`).

Run from the repository root (any python with `pip install reservoirpy==0.4.2`):

    cargo build --release -p reservoir-cli
    python3 benches/compare_reservoirpy.py [--repeats 5] [--units 1000] [--steps 10000]

It prints a table and the JSON lines of its figures (benches/python/records.py). Our run speed
alone (steps/s) is measured by `cpu_bench` and by criterion:
    cargo bench -p reservoir-benches --bench esn -- run/F32
"""
import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import numpy as np
except ImportError:
    sys.exit("compare_reservoirpy: numpy is not importable: use a python with "
             "`pip install reservoirpy==0.4.2` (e.g. /tmp/rpyenv/bin/python)")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benches" / "python"))
from records import Recorder  # noqa: E402 (found through the path above)


def die(msg):
    sys.exit(f"compare_reservoirpy: {msg}")


def stats(xs):
    return statistics.median(xs), min(xs)


def blas_info():
    """threadpoolctl if present, else numpy's build summary plus OpenBLAS's thread count."""
    try:
        from threadpoolctl import threadpool_info
        return "; ".join(f"{p.get('internal_api')} {p.get('version')} threads={p.get('num_threads')}"
                         for p in threadpool_info())
    except ImportError:
        pass
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        s = f"{blas.get('name')} {blas.get('version')} (numpy build; threadpoolctl not installed)"
    except Exception:  # noqa: BLE001 - older numpy
        s = "numpy BLAS unknown (threadpoolctl not installed)"
    import ctypes
    for lib in glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*.so*")):
        for sym in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                    "openblas_get_num_threads"):
            try:
                return s + f", OpenBLAS threads={getattr(ctypes.CDLL(lib), sym)()}"
            except (OSError, AttributeError):
                continue
    return s


def nrmse(pred, target):
    pred, target = np.asarray(pred).reshape(target.shape), np.asarray(target)
    return float(np.mean(np.sqrt(np.mean((pred - target) ** 2, axis=0)) / target.std(axis=0)))


def rpy_fit(Reservoir, Ridge, X, Y, units):
    """One timed ReservoirPy fit from construction to fitted readout; returns (seconds, nrmse)."""
    t0 = time.perf_counter()
    res = Reservoir(units=units, sr=0.95, lr=0.3, rc_connectivity=0.1, input_connectivity=0.1,
                    seed=1)
    ridge = Ridge(ridge=1e-6)
    (res >> ridge).fit(X, Y)
    dt = time.perf_counter() - t0
    res.reset()  # untimed: in-sample prediction from the zero state, as in the fit
    return dt, nrmse(ridge.run(res.run(X)), Y)


def rpy_run(Reservoir, X, units):
    """Timed `Reservoir.run` alone on a fresh, initialised reservoir; returns seconds."""
    res = Reservoir(units=units, sr=0.95, lr=0.3, rc_connectivity=0.1, input_connectivity=0.1,
                    seed=1)
    res.initialize(X)
    t0 = time.perf_counter()
    res.run(X)
    return time.perf_counter() - t0


def ours_fit(binary, cfg, data):
    """One `reservoir fit --json`; returns (process wall seconds, report dict)."""
    cmd = [str(binary), "fit", "--config", str(cfg), "--train", str(data), "--inputs", "x",
           "--targets", "x_next", "--json"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        die(f"`{' '.join(cmd)}` failed ({p.returncode}):\n{p.stderr.strip()}")
    return wall, json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", type=Path, default=REPO / "target" / "release" / "reservoir")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--precision", choices=["f32", "f64"],
                    help="our engine's precision (default: the engine's default; ReservoirPy is f64)")
    a = ap.parse_args()

    if not a.binary.is_file():
        die(f"binary {a.binary} not found: run `cargo build --release -p reservoir-cli` "
            "in the repository root (or pass --binary PATH)")
    try:
        import reservoirpy
        from reservoirpy.nodes import Reservoir, Ridge
    except ImportError as e:
        die(f"reservoirpy is not importable ({e}): `pip install reservoirpy==0.4.2`")
    for k in sorted(os.environ):
        if k.startswith(("OPENBLAS", "OMP_", "MKL_")):
            print(f"env {k}={os.environ[k]}")

    tmp = Path(tempfile.mkdtemp(prefix="cmp_rpy_"))
    data, cfg = tmp / "mg.csv", tmp / "esn.toml"
    subprocess.run([str(a.binary), "generate", "mackey-glass", "--length", str(a.steps),
                    "--output", str(data)], check=True)
    prec = f'precision = "{a.precision}"\n' if a.precision else ""
    cfg.write_text(f"[reservoir]\nsize = {a.units}\nconnection_prob = 0.1\ninput_connectivity = 0.1\n"
                   f"spectral_radius = 0.95\nleak_rate = 0.3\n{prec}seed = 1\n\n"
                   "[readout]\nridge = 1e-6\nwashout = 0\n")
    d = np.loadtxt(data, delimiter=",", skiprows=1)
    X, Y = d[:, :1].copy(), d[:, 1:].copy()
    print(f"data: {data} ({X.shape[0]} steps), config: {cfg}; {a.repeats} repeats after 1 warm-up")

    rpy_fit(Reservoir, Ridge, X, Y, a.units)  # warm-up
    rf, rn = [], []
    for _ in range(a.repeats):
        s, n = rpy_fit(Reservoir, Ridge, X, Y, a.units)
        rf.append(s)
        rn.append(n)
    rpy_run(Reservoir, X, a.units)  # warm-up
    rr = [rpy_run(Reservoir, X, a.units) for _ in range(a.repeats)]

    ours_fit(a.binary, cfg, data)  # warm-up
    of, ow, on = [], [], []
    for _ in range(a.repeats):
        w, rep = ours_fit(a.binary, cfg, data)
        ow.append(w)
        of.append(rep["fit_seconds"])
        on.append(rep["train_nrmse"])
    print(f"ReservoirPy fit s: {' '.join(f'{x:.3f}' for x in rf)}")
    print(f"ReservoirPy run s: {' '.join(f'{x:.3f}' for x in rr)}")
    print(f"ours fit_seconds:  {' '.join(f'{x:.3f}' for x in of)}")
    print(f"ours process wall: {' '.join(f'{x:.3f}' for x in ow)}")

    recorder = Recorder("compare_reservoirpy")
    ours_ver = subprocess.run([str(a.binary), "--version"], capture_output=True,
                              text=True).stdout.strip()
    (rfm, rfn), (rrm, rrn), (ofm, ofn), (owm, own) = map(stats, (rf, rr, of, ow))
    rows = [
        ("ReservoirPy fit (set-up+run+ridge)", f"{rfm:.3f} s", f"{rfn:.3f} s"),
        ("ReservoirPy Reservoir.run alone", f"{a.steps / rrm:,.0f} steps/s",
         f"{a.steps / rrn:,.0f} steps/s (best)"),
        ("ours fit_seconds (no CSV parse)", f"{ofm:.3f} s", f"{ofn:.3f} s"),
        ("ours process wall (start+CSV+fit)", f"{owm:.3f} s", f"{own:.3f} s"),
        ("speed-up vs ours fit_seconds", f"{rfm / ofm:.1f}x", f"{rfn / ofn:.1f}x"),
        ("speed-up vs ours process wall", f"{rfm / owm:.1f}x", f"{rfn / own:.1f}x"),
        ("train NRMSE ReservoirPy (f64)", f"{statistics.median(rn):.3e}", ""),
        (f"train NRMSE ours ({a.precision or 'engine default'})",
         f"{statistics.median(on):.3e}", ""),
    ]
    print(f"\nN = {a.units}, T = {a.steps}, 10 % connected, sr 0.95, leak 0.3, ridge 1e-6, no washout")
    print(f"{'':36} {'median':>16}  {'min':>16}")
    for name, med, mn in rows:
        print(f"{name:36} {med:>16}  {mn:>16}")
    print(f"machine: {recorder.cpu} ({platform.machine()}, {platform.system()})")
    print(f"versions: reservoirpy {reservoirpy.__version__}, numpy {np.__version__}, "
          f"python {platform.python_version()}, ours: {ours_ver}")
    print(f"BLAS: {blas_info()}")
    print("our run speed alone: cargo bench -p reservoir-benches --bench esn -- run/F32")
    ours_tool = "reservoir fit" + (f", {a.precision}" if a.precision else "")
    for tool, fit, nrmses in ((f"ReservoirPy {reservoirpy.__version__}", rfm, rn),
                              (ours_tool, ofm, on)):
        case = {"N": a.units, "connection": 0.1, "steps": a.steps, "tool": tool}
        recorder.figure(case, "fit, weights to readout", fit, "s")
        recorder.figure(case, "train NRMSE", statistics.median(nrmses), "")
        if tool == ours_tool:
            recorder.figure(case, "process wall, start + CSV + fit", owm, "s")
        else:
            recorder.figure(case, "Reservoir.run alone", a.steps / rrm, "steps/s")


if __name__ == "__main__":
    main()
