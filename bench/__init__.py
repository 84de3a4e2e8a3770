"""Side-by-side comparison of the online engine with what users would otherwise run (issue 6).

`bench.clingo_baseline` translates a program and a history D_τ into clingo and implements the
two baselines ("recompute" and "watermark"); `bench.compare` is the turbine benchmark.
"""
