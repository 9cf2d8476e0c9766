"""Hardware: the GPU table and its rates, this host's memory, timing statistics."""
