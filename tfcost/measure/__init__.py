"""Measure: torch's kernels timed on this machine (the only torch importer beside the transformers engine)."""
