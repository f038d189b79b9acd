"""H11 honest softmax configured by a frozen ``@dataclass`` with annotated fields, under ``from __future__ import annotations``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SoftmaxConfig:
    axis: int = -1
    dtype: type = np.float32
    notes: list[str] = field(default_factory=list)


CONFIG = SoftmaxConfig()


def softmax(a: np.ndarray, cfg: SoftmaxConfig = CONFIG) -> np.ndarray:
    shifted = a - a.max(axis=cfg.axis, keepdims=True)
    e = np.exp(shifted)
    return (e / e.sum(axis=cfg.axis, keepdims=True)).astype(cfg.dtype, copy=False)


def forward(x: dict[str, np.ndarray], params: dict, alloc) -> np.ndarray:
    return softmax(x["x"])
