"""The physical backends of the set-at-a-time plan: Polars, numpy arrays with compiled kernels, and the choice between them."""
