"""The floor for start-up: the least a typer + rich + pydantic + pyyaml app does to print one table.

It imports all four, parses one command-line argument with typer, reads a tiny YAML file with yaml.safe_load,
validates it into a pydantic model and prints that model as one rich table. tfcost's commands do the same kinds
of work (plus their own), so their start-up is measured as a ratio to this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

TINY_YAML = Path(__file__).with_name("floor.yaml")


class Shape(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    name: str
    d_model: int
    n_layers: int
    n_heads: int


app = typer.Typer(add_completion=False)


@app.command()
def show(path: Annotated[Path, typer.Argument(help="a tiny YAML file")] = TINY_YAML) -> None:
    """Print the shape in PATH as one table."""
    shape = Shape.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    table = Table(title=shape.name)
    table.add_column("field")
    table.add_column("value", justify="right")
    for name, value in shape.model_dump().items():
        table.add_row(name, str(value))
    Console().print(table)


if __name__ == "__main__":
    app()
