"""Without scikit-learn the estimators keep their parameter protocol and fit and predict."""

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["sklearn"] = None  # as if scikit-learn were not installed
import reservoir
model = reservoir.ESNRegressor(size=50, device="cpu")
assert model.set_params(size=60) is model and model.get_params()["size"] == 60
u, y = reservoir.tasks.narma10(500, seed=1)
assert model.fit(u, y).predict(u).shape == (500, 1)
try:
    reservoir.ESNRegressor().predict(u)
except AttributeError as error:
    assert "not fitted" in str(error)
else:
    raise AssertionError("an unfitted estimator predicted")
"""


def test_estimators_work_without_scikit_learn():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
