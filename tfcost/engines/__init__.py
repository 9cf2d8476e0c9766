"""Engines: which one answers (tfcost's folds or transformers' build), and the transformers engine itself."""
