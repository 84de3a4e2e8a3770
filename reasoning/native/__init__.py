"""Layer 0: the row kernels (C, built at install time by setup.py; numpy where it was not) used by the executors and the stream scanner."""
