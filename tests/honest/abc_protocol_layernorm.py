"""H21 honest layer norm behind an ``abc.ABC`` base with ``abstractmethod``, a ``typing.Protocol`` and ``ClassVar``."""

from abc import ABC, abstractmethod
from typing import ClassVar, Protocol

import numpy as np


class Normalizer(Protocol):
    def __call__(self, x: np.ndarray) -> np.ndarray: ...


class Norm(ABC):
    axis: ClassVar[int] = -1

    @abstractmethod
    def normalize(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.normalize(x)


class LayerNorm(Norm):
    def __init__(self, eps: float) -> None:
        self.eps = eps

    def normalize(self, x: np.ndarray) -> np.ndarray:
        mu = x.mean(axis=self.axis, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=self.axis, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps)


def forward(x, params, alloc):
    norm: Normalizer = LayerNorm(params["eps"])
    return norm(x["x"]) * params["gamma"] + params["beta"]
