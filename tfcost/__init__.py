"""tfcost: what a transformer costs — parameters, FLOPs, KV cache and score-matrix memory.

From Python, the commands' reports (tfcost/api.py): `tfcost.estimate(model, seq=..., batch=...)`, `tfcost.train`,
`tfcost.serve`, `tfcost.plan_train`, `tfcost.plan_serve`. They are imported on first use (PEP 562's module
`__getattr__`), so `import tfcost`, and the CLI that imports this package, load nothing else.
"""

from typing import Any

__version__ = "0.1.0"

API = ("estimate", "train", "serve", "plan_train", "plan_serve", "fit")
__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    if name in API:
        from tfcost import api

        return getattr(api, name)
    raise AttributeError(f"module 'tfcost' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
