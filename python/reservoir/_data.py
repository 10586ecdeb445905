"""Input layouts: one series (T x K), a batch (B x T x K) or a list of (T_i x K) arrays."""

from __future__ import annotations

import numpy as np

_FLOATS = (np.float64, np.float32)


def _float64(array, name):
    """`array` as float64 without a copy when it already is (any memory order)."""
    array = np.asarray(array)
    if array.dtype == np.float64:
        return array
    if array.dtype.kind in "fiub":
        return array.astype(np.float64)
    if array.dtype.kind == "O":
        try:
            return array.astype(np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{name}: expected numbers, got {error}") from None
    raise TypeError(f"{name}: expected float32 or float64 values, got dtype {array.dtype}")


class Sequences:
    """Sequences as float64 2-D arrays, and the layout they came in, to give results back
    in the same layout."""

    def __init__(self, arrays, layout, batch=None):
        self.arrays = arrays
        self.layout = layout  # "series", "batch" or "list"
        self.batch = batch  # the B x T x K array of a "batch"

    @property
    def engine(self):
        """What the engine takes: the 3-D array of a batch (one borrow for every sequence),
        else the list of 2-D arrays."""
        return self.batch if self.batch is not None else self.arrays

    @property
    def width(self):
        return self.arrays[0].shape[1]

    def like(self, outputs):
        """Per-sequence outputs (each T_i x M) in the layout of these sequences."""
        if self.layout == "series":
            return outputs[0]
        if self.layout == "batch":
            return np.stack(outputs)
        return list(outputs)


def finite(array, name):
    """`array` unchanged, or a ValueError naming the first value that is NaN or infinite."""
    if not np.all(np.isfinite(array)):
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        where = ", ".join(f"{axis} {i}" for axis, i in zip(("row", "column"), index))
        raise ValueError(f"{name}: {where} is {array[index]} (NaN and infinity are not accepted)")
    return array


def sequences(X, name="X"):
    """`X` as `Sequences`: a 2-D array (or nested list of rows) is one series, a 3-D array B
    series of equal length, a list or tuple of 2-D arrays one array per sequence (lengths
    may differ)."""
    batch = None
    if isinstance(X, (list, tuple)) and (len(X) == 0 or any(np.ndim(x) == 2 for x in X)):
        if len(X) == 0:
            raise ValueError(f"{name}: no sequences (an empty list)")
        arrays = [_float64(x, f"{name}[{i}]") for i, x in enumerate(X)]
        for i, x in enumerate(arrays):
            if x.ndim != 2:
                raise ValueError(
                    f"{name}[{i}]: expected a 2-D array (steps x channels), got shape {x.shape}"
                )
        layout = "list"
    else:
        array = _float64(X, name)
        if array.ndim == 2:
            arrays, layout = [array], "series"
        elif array.ndim == 3:
            arrays, layout, batch = list(array), "batch", array
        else:
            raise ValueError(
                f"{name}: expected a 2-D array (steps x channels), a 3-D array "
                f"(sequences x steps x channels) or a list of 2-D arrays, got shape {array.shape}"
            )
    widths = {x.shape[1] for x in arrays}
    if len(widths) > 1:
        raise ValueError(f"{name}: sequences have different numbers of channels: {sorted(widths)}")
    if any(x.shape[0] == 0 for x in arrays):
        empty = next(i for i, x in enumerate(arrays) if x.shape[0] == 0)
        raise ValueError(f"{name}: sequence {empty} has no steps")
    return Sequences(arrays, layout, batch)


def targets(y, inputs, name="y"):
    """Per-row targets for `inputs` (a `Sequences`), each T_i x M; whether they were given
    as one value per row (1-D per sequence)."""
    if inputs.layout == "list":
        if not isinstance(y, (list, tuple)) or len(y) != len(inputs.arrays):
            raise ValueError(
                f"{name}: expected a list of {len(inputs.arrays)} arrays, one per sequence of X"
            )
        parts = [_float64(t, f"{name}[{i}]") for i, t in enumerate(y)]
    else:
        array = _float64(y, name)
        parts = [array] if inputs.layout == "series" else list(array)
    flat = all(p.ndim == 1 for p in parts)
    shaped = []
    for i, (p, x) in enumerate(zip(parts, inputs.arrays)):
        p = p[:, None] if p.ndim == 1 else p
        if p.ndim != 2 or p.shape[0] != x.shape[0]:
            where = name if inputs.layout == "series" else f"{name}[{i}]"
            raise ValueError(
                f"{where}: expected {x.shape[0]} rows (one per step of X), got shape {p.shape}"
            )
        shaped.append(p)
    return shaped, flat
