from tfcost.cli.main import run

run()
