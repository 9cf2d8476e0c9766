"""The core: operation rows per layer kind, the Model they build, and every count as a fold over them. Pure: no I/O."""
