#!/usr/bin/env python3
"""ReservoirPy 0.4.2's `NVAR >> Ridge` and our `reservoir.NVAR` with `Readout.ridge`, side by
side in one process, on the same series and the same hyper-parameters.

Two one-step-ahead forecasts (inputs x(t), targets x(t + 1)): Lorenz-63 (`reservoir.tasks.
lorenz`, 3 channels, dt 0.025) and Mackey–Glass (tau 17, 1 channel). Each tool builds the NVAR
(`delay`, `order`, `strides`), computes the features of the training inputs, fits a ridge
readout with an intercept after a warm-up of `delay * strides` steps, continues the NVAR over
the test inputs and predicts them; timed with time.perf_counter from building the NVAR to the
last test prediction (the median of --repeat runs). Scored by NRMSE on the test rows. The
features of the training inputs are compared value by value.

Prints a line per task and tool and the JSON lines of its figures (`records.py`). From the
repository root, with the package installed (see python/) and `pip install reservoirpy==0.4.2`:

    python3 benches/python/nvar_vs_reservoirpy.py --repeat 5
"""

import argparse

import numpy as np
import reservoir
from package_vs_reservoirpy import timed
from records import Recorder

TASKS = {
    # name: (delay, order, strides, ridge)
    "lorenz": (2, 2, 1, 2.5e-6),
    "mackey_glass": (8, 2, 2, 1e-6),
}


def series(task, steps):
    """Inputs (T x K) of a task's series, and their one-step-ahead targets."""
    if task == "lorenz":
        x = reservoir.tasks.lorenz(steps + 1, dt=0.025)
    else:
        x = reservoir.tasks.mackey_glass(steps + 1, tau=17, seed=1).reshape(-1, 1)
    return x[:-1], x[1:]


def nrmse(predicted, truth):
    """RMSE over the standard deviation of the truth, averaged over channels."""
    error = np.sqrt(np.mean((predicted - truth) ** 2, axis=0))
    return float(np.mean(error / np.std(truth, axis=0)))


def reservoirpy_forecast(params, u, y, u_test):
    from reservoirpy.nodes import NVAR, Ridge

    delay, order, strides, ridge = params
    model = NVAR(delay=delay, order=order, strides=strides) >> Ridge(ridge=ridge)
    model.fit(u, y, warmup=delay * strides)
    return model.run(u_test)


def our_forecast(params, u, y, u_test):
    delay, order, strides, ridge = params
    nvar = reservoir.NVAR(delay, order, strides, input_size=u.shape[1])
    warmup = delay * strides
    readout = reservoir.Readout.ridge(nvar.run(u)[warmup:], y[warmup:], ridge)
    return readout.predict(nvar.run(u_test))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--train-steps", type=int, default=20_000)
    ap.add_argument("--test-steps", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import reservoirpy
    from reservoirpy.nodes import NVAR

    recorder = Recorder("nvar_vs_reservoirpy")
    tools = (
        (f"ReservoirPy {reservoirpy.__version__}", reservoirpy_forecast),
        ("reservoir (Python package), cpu", our_forecast),
    )
    for task in a.tasks.split(","):
        params = TASKS[task]
        u_all, y_all = series(task, a.train_steps + a.test_steps)
        u, y = u_all[: a.train_steps], y_all[: a.train_steps]
        u_test, y_test = u_all[a.train_steps :], y_all[a.train_steps :]
        delay, order, strides, _ = params
        theirs = NVAR(delay=delay, order=order, strides=strides).run(u)
        ours = reservoir.NVAR(delay, order, strides, input_size=u.shape[1]).run(u)
        difference = float(np.max(np.abs(theirs - ours)))
        print(f"{task}: {ours.shape[1]} features, largest difference {difference:.3g}")
        case = {"task": task, "delay": delay, "order": order, "strides": strides}
        recorder.figure(
            {**case, "train steps": a.train_steps}, "feature difference", difference, ""
        )
        for tool, forecast in tools:
            data = (params, u, y, u_test)
            seconds, predicted = timed(a.repeat, lambda f=forecast, d=data: f(*d))
            score = nrmse(predicted, y_test)
            print(
                f"{task}, {tool}: {seconds:.4f} s, test NRMSE {score:.4g}", flush=True
            )
            tool_case = {**case, "train steps": a.train_steps, "tool": tool}
            recorder.figure(tool_case, "fit + predict", seconds, "s")
            recorder.figure(tool_case, "test NRMSE", score, "")


if __name__ == "__main__":
    main()
