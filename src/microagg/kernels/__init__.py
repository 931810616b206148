"""numba kernels shared by several methods (compiled lazily, cached on disk)."""
