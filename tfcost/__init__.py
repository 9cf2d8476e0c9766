"""tfcost: what a transformer costs — parameters, FLOPs, KV cache and score-matrix memory.

The public Python API is the core: pass a ModelShape (from `load_model`) and get exact integers back.
"""

__version__ = "0.1.0"
