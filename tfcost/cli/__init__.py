"""The command line: one module per command (parse, call, render), registered on one typer app (app.py);
main.py is the entry point. No arithmetic lives here."""
