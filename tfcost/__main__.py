from tfcost.cli import main

main()
