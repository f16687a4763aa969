"""A growable 1-d numpy array (amortised O(1) append), the column store of the indexes."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["GrowableArray"]


class GrowableArray:
    """``view`` is the live prefix ``a[:n]``; ``a`` may be longer (capacity)."""

    def __init__(self, dtype: Any, fill: Any = 0) -> None:
        self.a: npt.NDArray[Any] = np.full(1024, fill, dtype=dtype)
        self.n = 0
        self.fill = fill

    def reserve(self, n: int) -> None:
        """Make room for ``n`` items (new room holds ``fill``)."""
        if n > len(self.a):
            new = np.full(max(n, 2 * len(self.a)), self.fill, dtype=self.a.dtype)
            new[: self.n] = self.a[: self.n]
            self.a = new

    def extend(self, values: npt.ArrayLike) -> None:
        v = np.asarray(values)
        self.reserve(self.n + len(v))
        self.a[self.n : self.n + len(v)] = v
        self.n += len(v)

    @property
    def view(self) -> npt.NDArray[Any]:
        return self.a[: self.n]
