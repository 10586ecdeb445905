"""scikit-learn's estimator base classes when scikit-learn is installed; otherwise the same
parameter protocol (`get_params`, `set_params`) without it."""

from __future__ import annotations

import inspect

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
except ImportError:  # scikit-learn is optional

    class BaseEstimator:
        """Parameters are the constructor's arguments, stored unchanged as attributes."""

        @classmethod
        def _get_param_names(cls):
            signature = inspect.signature(cls.__init__)
            return sorted(p for p in signature.parameters if p != "self")

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(
                        f"invalid parameter {name!r} for {type(self).__name__}; "
                        f"valid parameters: {valid}"
                    )
                setattr(self, name, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class RegressorMixin:
        _estimator_type = "regressor"

    class ClassifierMixin:
        _estimator_type = "classifier"

    class TransformerMixin:
        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)


__all__ = ["BaseEstimator", "ClassifierMixin", "RegressorMixin", "TransformerMixin"]
