"""Forecasting with the scikit-learn estimator: predict the Mackey-Glass series 10 steps
ahead, choosing the leak rate and ridge by a time-series cross-validation.

    python python/examples/forecast.py
"""

import numpy as np
from sklearn.model_selection import GridSearchCV, TimeSeriesSplit

import reservoir

HORIZON = 10

series = reservoir.tasks.mackey_glass(6000)
inputs, targets = series[:-HORIZON, None], series[HORIZON:]
train, test = slice(0, 4000), slice(4000, None)

search = GridSearchCV(
    reservoir.ESNRegressor(size=500, spectral_radius=0.95, seed=1, washout=100, device="auto"),
    {"leak_rate": [0.1, 0.3, 1.0], "ridge": [1e-8, 1e-5]},
    cv=TimeSeriesSplit(n_splits=3),
)
search.fit(inputs[train], targets[train])
model = search.best_estimator_
predicted = model.predict(inputs[test])[100:]
truth = targets[test][100:]
nrmse = np.sqrt(np.mean((predicted - truth) ** 2)) / np.std(truth)
print(f"best {search.best_params_} on {model.device_}: test NRMSE {nrmse:.4f} at {HORIZON} steps")
