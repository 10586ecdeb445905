#!/usr/bin/env python3
"""Next-generation reservoir computing (Gauthier, Bollt, Griffith, Barbosa, "Next generation
reservoir computing", Nature Communications 12, 5564 (2021)): closed-loop forecasts of
Lorenz-63 and of the double-scroll circuit with our `reservoir.NVAR` and `Readout.ridge`.

The paper's set-ups, with the values of its authors' code (github.com/quantinfo/ng-rc-paper-code,
LorenzConstLinQuadraticNVARtimedelayNRMSE-RK23.py, DoubleScrollNVAR-RK23.py):
- Lorenz-63 (sigma 10, rho 28, beta 8/3), dt 0.025, k = 2 delays, s = 1, the linear part, its
  quadratic monomials and a constant (28 features), warm-up 5 and training 10 time units,
  ridge 2.5e-6, largest Lyapunov exponent 0.9056.
- Double scroll (dV1/dt = V1/R1 - dV/R2 - 2 Ir sinh(beta dV), dV2/dt = dV/R2 + 2 Ir sinh(beta dV)
  - I, dI/dt = V2 - R4 I, dV = V1 - V2; R1 1.2, R2 3.44, R4 0.193, beta 11.6, Ir 2.25e-5), dt
  0.25, k = 2, the linear part and only its cubic monomials, no constant (the odd symmetry; 62
  features), warm-up 1 and training 100 time units, ridge 1e-3, Lyapunov exponent 0.128.
The readout learns the increment X(i+1) - X(i); the forecast runs closed-loop from the last
training point, X(i+1) = X(i) + W_out O(i), the NVAR keeping its delay buffer from training.
Where the readout has an intercept (Lorenz-63), the same forecast is also made by the engine's
own closed loop, `ESNRegressor(kind="nvar", increments=True)` fitted on the series and
`generate` continuing it, and its VPT is reported beside the hand-written loop's.
The ridge is on the un-normalised sums, as the paper's. Lorenz's constant is the readout's
intercept (not penalised; the paper penalises it, which at 2.5e-6 changes nothing visible). The
double scroll has none: the readout is fitted on the rows and their negatives with ridge
2 alpha, which is exactly the paper's solution with intercept 0. NVAR(2, 3) gives the cubic
monomials alone (its nonlinear part is the monomials of degree `order` exactly).

Truth (--truths): `rk4`, a fixed-step RK4 at dt/25 sampled at dt (accurate), or `rk23`, scipy's
RK23 at its default tolerances (rtol 1e-3) as the authors' code integrates. It matters: on the
accurate Lorenz data the paper's ridge 2.5e-6 gives a closed loop that blows up within about
one Lyapunov time (a numpy lstsq fit forecasts the same, so it is not our solver), while on
RK23 data it forecasts for several; `--ridge lorenz63=1e-3` restores a few on the accurate data.
Each of --trials trajectories starts from a seeded random point run through a transient onto
the attractor. Figures, mean and std over the trials (the authors' code prints std/sqrt(n)):
- VPT: the first forecast time at which ||x_pred - x_true|| / sqrt(mean over the test
  trajectory of ||x_true - mean||^2) exceeds the threshold 0.3, in Lyapunov times (the test
  horizon if it never does; a forecast that blew up counts as exceeding).
- The paper's metric as its authors' code computes it: NRMSE = sqrt(mean over the 3 components
  and the first round(1/(lambda dt)) forecast steps of the squared error / the sum of the 3
  components' variances over the trial's sampled trajectory); NaN if one blew up in it.
- The one-step training NRMSE (same normalisation), and the fit time: building the NVAR, its
  features of warm-up and training, the ridge (median over trials of --repeat fits).
The paper's own code, run on the same set-ups, is compared in docs/benchmarks.md.

Prints a line per system and truth and the JSON lines of its figures (`records.py`). From the
repository root, with the package installed (see python/), numpy and scipy (for rk23):

    python benches/python/ngrc_forecast.py
"""

import argparse
import itertools
import statistics

import numpy as np
import reservoir
from package_vs_reservoirpy import timed
from records import Recorder

THRESHOLD = 0.3
SUBSTEPS = 25
TRUTHS = {"rk4": "RK4, step dt/25", "rk23": "scipy RK23, default tolerances"}
R1, R2, R4, BETA, IR = 1.2, 3.44, 0.193, 11.6, 2.25e-5


def lorenz63(y):
    x, v, z = y[:, 0], y[:, 1], y[:, 2]
    return np.stack([10.0 * (v - x), x * (28.0 - z) - v, x * v - 8.0 / 3.0 * z], axis=1)


def double_scroll(y):
    dv = y[:, 0] - y[:, 1]
    g = dv / R2 + 2.0 * IR * np.sinh(BETA * dv)
    return np.stack([y[:, 0] / R1 - g, g - y[:, 2], y[:, 1] - R4 * y[:, 2]], axis=1)


SYSTEMS = {
    # the vector field, dt, delay k, monomial order, constant, ridge, warm-up, training and
    # test times, Lyapunov exponent, transient, the box of the random initial conditions
    "lorenz63": {
        "field": lorenz63, "dt": 0.025, "delay": 2, "order": 2, "constant": True,
        "ridge": 2.5e-6, "warmup": 5.0, "train": 10.0, "test": 25.0, "lyapunov": 0.9056,
        "transient": 25.0, "box": ([-20.0, -20.0, 5.0], [20.0, 20.0, 45.0]),
    },
    "double_scroll": {
        "field": double_scroll, "dt": 0.25, "delay": 2, "order": 3, "constant": False,
        "ridge": 1e-3, "warmup": 1.0, "train": 100.0, "test": 400.0, "lyapunov": 0.128,
        "transient": 100.0, "box": ([-0.5, -0.5, -0.5], [0.5, 0.5, 0.5]),
    },
}


def trajectories(s, trials, seed, truth):
    """(trials x T x 3) true trajectories sampled at dt after the transient."""
    y = np.random.default_rng(seed).uniform(*s["box"], size=(trials, 3))
    skip = round(s["transient"] / s["dt"])
    samples = round((s["warmup"] + s["train"] + s["test"]) / s["dt"]) + 1
    if truth == "rk23":
        from scipy.integrate import solve_ivp

        t = s["dt"] * np.arange(skip, skip + samples)

        def field(_, v):
            return s["field"](v[None])[0]

        runs = [solve_ivp(field, (0, t[-1]), y0, "RK23", t_eval=t).y.T for y0 in y]
        return np.ascontiguousarray(np.stack(runs))  # Readout.ridge takes C order only
    h = s["dt"] / SUBSTEPS
    out = np.empty((trials, samples, 3))
    for i in range(skip + samples):
        if i >= skip:
            out[:, i - skip] = y
        for _ in range(SUBSTEPS):
            k1 = s["field"](y)
            k2 = s["field"](y + 0.5 * h * k1)
            k3 = s["field"](y + 0.5 * h * k2)
            k4 = s["field"](y + h * k3)
            y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return out


def fit(s, x, warm, train):
    """The NVAR over x[:warm + train] and the ridge readout of the increments of the training
    rows (warm - 1 .. warm + train - 2); the NVAR's last row starts the forecast."""
    nvar = reservoir.NVAR(s["delay"], s["order"], 1, input_size=x.shape[1])
    features = nvar.run(x[: warm + train])
    rows = features[warm - 1 : warm + train - 1]
    steps = x[warm : warm + train] - x[warm - 1 : warm + train - 1]
    if s["constant"]:
        readout = reservoir.Readout.ridge(rows, steps, s["ridge"])
    else:
        # with the negated rows every mean is 0 (intercept 0) and every sum doubles, so 2 alpha
        # gives (O Oᵀ + alpha I)⁻¹ of the rows alone
        readout = reservoir.Readout.ridge(
            np.vstack([rows, -rows]), np.vstack([steps, -steps]), 2.0 * s["ridge"]
        )
    return nvar, readout, features, rows, steps


def forecast(nvar, readout, start, feature, steps):
    """Closed loop: X(i+1) = X(i) + readout(O(i)), each prediction fed back into the NVAR."""
    out = np.full((steps, start.shape[0]), np.nan)
    x, f = start, feature[None]
    for j in range(steps):
        x = x + readout.predict(f)[0]
        if not np.all(np.abs(x) < 1e30):  # blown up: the rest stays NaN
            break
        out[j] = x
        f = nvar.run(x[None])
    return out


def engine_forecast(s, x, warm, train, steps):
    """The engine's closed loop: an NVAR regressor learning increments on x[:warm + train]
    (the same rows fitted as `fit`), continued through the last training point and run
    `steps` values on; NaN past a value that is not finite."""
    model = reservoir.ESNRegressor(
        kind="nvar", nvar={"delay": s["delay"], "order": s["order"], "strides": 1},
        increments=True, ridge=s["ridge"], washout=warm - 1, device="cpu",
    ).fit(x[: warm + train - 1], x[1 : warm + train])
    try:
        return model.generate(steps, x[warm + train - 1 : warm + train])
    except ValueError:  # the loop diverged to a value that is not finite
        return np.full((steps, x.shape[1]), np.nan)


def valid_time(s, predicted, truth):
    """The VPT of `predicted` against `truth`, in Lyapunov times."""
    scale = np.sqrt(np.mean(np.sum((truth - truth.mean(axis=0)) ** 2, axis=1)))
    past = np.flatnonzero(~(np.linalg.norm(predicted - truth, axis=1) / scale <= THRESHOLD))
    return (past[0] + 1 if past.size else len(truth)) * s["dt"] * s["lyapunov"]


def trial(s, x, repeat):
    """(VPT, the engine's VPT (NaN without an intercept), test NRMSE, training NRMSE, fit
    seconds, features, blew up) of one trajectory."""
    dt = s["dt"]
    warm, train = round(s["warmup"] / dt), round(s["train"] / dt)
    seconds, (nvar, readout, features, rows, steps) = timed(
        repeat, lambda: fit(s, x, warm, train)
    )
    truth = x[warm + train :]
    predicted = forecast(nvar, readout, x[warm + train - 1], features[-1], len(truth))
    total_var = float(np.sum(np.var(x, axis=0)))
    train_nrmse = np.sqrt(np.mean((readout.predict(rows) - steps) ** 2) / total_var)
    n = round(1.0 / (s["lyapunov"] * dt))
    nrmse = np.sqrt(np.mean((predicted[:n] - truth[:n]) ** 2) / total_var)
    vpt = valid_time(s, predicted, truth)
    engine_vpt = (
        valid_time(s, engine_forecast(s, x, warm, train, len(truth)), truth)
        if s["constant"]
        else np.nan
    )
    width = features.shape[1] + int(s["constant"])
    blew = bool(np.isnan(predicted).any())
    return vpt, engine_vpt, nrmse, train_nrmse, seconds, width, blew


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--truths", default="rk4,rk23", help="rk4 (RK4 at dt/25), rk23 (scipy)")
    ap.add_argument("--ridge", action="append", default=[], help="SYSTEM=ALPHA, overrides")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="fits timed per trial (median)")
    a = ap.parse_args()
    for item in a.ridge:
        system, alpha = item.split("=")
        SYSTEMS[system]["ridge"] = float(alpha)
    recorder = Recorder("ngrc_forecast")
    tool = "reservoir (Python package), cpu"
    for system, truth in itertools.product(a.systems.split(","), a.truths.split(",")):
        s = SYSTEMS[system]
        data = trajectories(s, a.trials, a.seed, truth)
        results = [trial(s, x, a.repeat) for x in data]
        columns = (np.array(v) for v in zip(*results, strict=True))
        vpt, engine_vpt, nrmse, train_nrmse, seconds, width, blew = columns
        horizon = s["test"] * s["lyapunov"]
        fit_s = statistics.median(seconds)
        print(
            f"{system}, truth {truth}, ridge {s['ridge']:g}: {width[0]} features, {a.trials} "
            f"trials: VPT {vpt.mean():.2f} ± {vpt.std():.2f} Lyapunov times (error > "
            f"{THRESHOLD}; {np.sum(vpt >= horizon - 1e-9)} reached the {horizon:.1f} horizon, "
            f"{blew.sum()} blew up), NRMSE over 1 Lyapunov time {nrmse.mean():.3e} ± "
            f"{nrmse.std():.2e}, training NRMSE {train_nrmse.mean():.3e} ± "
            f"{train_nrmse.std():.2e}, fit {fit_s * 1e3:.3f} ms (median)",
            flush=True,
        )
        case = {
            "system": system, "truth": TRUTHS[truth], "k": s["delay"], "order": s["order"],
            "constant": "yes" if s["constant"] else "no", "ridge": s["ridge"], "dt": s["dt"],
            "train time": s["train"], "trials": a.trials, "seed": a.seed, "tool": tool,
        }
        vpt_metric, unit = f"VPT (error > {THRESHOLD})", "Lyapunov times"
        recorder.figure(case, f"{vpt_metric}, mean", float(vpt.mean()), unit)
        recorder.figure(case, f"{vpt_metric}, std", float(vpt.std()), unit)
        if s["constant"]:
            engine = f"{vpt_metric}, engine closed loop (increments, generate)"
            recorder.figure(case, f"{engine}, mean", float(engine_vpt.mean()), unit)
            recorder.figure(case, f"{engine}, std", float(engine_vpt.std()), unit)
        recorder.figure(case, "test NRMSE over 1 Lyapunov time, mean", float(nrmse.mean()), "")
        recorder.figure(case, "test NRMSE over 1 Lyapunov time, std", float(nrmse.std()), "")
        recorder.figure(case, "train NRMSE, mean", float(train_nrmse.mean()), "")
        recorder.figure(case, "train NRMSE, std", float(train_nrmse.std()), "")
        recorder.figure(case, "forecasts blown up", int(blew.sum()), "")
        recorder.figure(case, "fit", fit_s, "s")


if __name__ == "__main__":
    main()
