from tfcost.cli import run

run()
