"""Layer 0: small helpers with no knowledge of the language (atomic writes, GC pauses)."""
