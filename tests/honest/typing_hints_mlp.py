"""H18 honest SwiGLU MLP with rich ``typing`` hints: ``Callable``, ``Dict``, ``numpy.typing.NDArray`` and ``dtype: type``."""

from typing import Callable, Dict, Optional, Union

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]
Activation = Callable[[Array], Array]


def silu(g: Array) -> Array:
    with np.errstate(over="ignore"):
        return g / (1.0 + np.exp(-g))


def mlp(x: Array, w_gate: Array, w_up: Array, w_down: Array, act: Activation = silu,
        dtype: type = np.float32, out: Optional[Array] = None) -> Array:
    h = act(x @ w_gate) * (x @ w_up)
    y = h @ w_down
    return y.astype(dtype, copy=False) if out is None else np.copyto(out, y) or out


def forward(x: Dict[str, Array], params: Dict[str, Union[Array, float]], alloc) -> Array:
    return mlp(x["x"], params["W_gate"], params["W_up"], params["W_down"])
