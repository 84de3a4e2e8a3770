"""Layer 0: the compiled row kernels (C, numba, numpy stand-ins) used by the executors and the stream scanner."""
