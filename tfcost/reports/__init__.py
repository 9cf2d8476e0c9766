"""Reports: the typed results each command returns, built from the costs; no arithmetic, no rendering."""
