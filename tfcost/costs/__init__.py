"""Costs of a run built on the core: training, parallelism, serving, sweeps. Pure: no I/O (profiles excepted)."""
