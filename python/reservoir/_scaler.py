"""Standardising sequences inside a scikit-learn `Pipeline`."""

from __future__ import annotations

import numpy as np

from ._base import BaseEstimator, TransformerMixin
from ._data import finite, sequences


class SequenceScaler(TransformerMixin, BaseEstimator):
    """Standardises every channel over all steps of all sequences: `(x - mean_) / scale_`.

    It takes the layouts the estimators take (one series T x K, a batch B x T x K, a list of
    T_i x K) and gives back the same layout, so it can stand before `ESNRegressor` or
    `ESNClassifier` in a `Pipeline`, fitted on the training sequences only. A channel that
    does not vary keeps scale 1.
    """

    def __init__(self, with_mean=True, with_std=True):
        self.with_mean = with_mean
        self.with_std = with_std

    def fit(self, X, y=None):
        """Learns each channel's mean and standard deviation over every step of X."""
        inputs = sequences(X)
        arrays = [finite(x, f"X[{i}]") for i, x in enumerate(inputs.arrays)]
        rows = sum(x.shape[0] for x in arrays)
        mean = sum(x.sum(axis=0) for x in arrays) / rows
        variance = sum(((x - mean) ** 2).sum(axis=0) for x in arrays) / rows
        std = np.sqrt(variance)
        self.mean_ = mean if self.with_mean else np.zeros_like(mean)
        self.scale_ = np.where(std > 0, std, 1.0) if self.with_std else np.ones_like(std)
        self.n_features_in_ = inputs.width
        return self

    def _apply(self, X, function):
        if not hasattr(self, "mean_"):
            from ._estimators import _not_fitted

            raise _not_fitted(self)
        inputs = sequences(X)
        if inputs.width != self.n_features_in_:
            raise ValueError(
                f"X has {inputs.width} features, but SequenceScaler is expecting "
                f"{self.n_features_in_} features as input."
            )
        return inputs.like([function(x) for x in inputs.arrays])

    def transform(self, X):
        """X standardised, in its layout."""
        return self._apply(X, lambda x: (x - self.mean_) / self.scale_)

    def inverse_transform(self, X):
        """Standardised sequences back in the original units, in their layout."""
        return self._apply(X, lambda x: x * self.scale_ + self.mean_)
