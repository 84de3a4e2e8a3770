"""Layer 7: the engine's commands of `hypo` (`check`, `run`)."""
