"""MNIST digit addition (Trask et al. 2018, Section 4.2, Table 2); see ``tasks.mnist_series``."""

from tasks.mnist_series import run

__all__ = ["run"]
