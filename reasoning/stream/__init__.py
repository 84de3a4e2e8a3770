"""Layer 5, stream input: JSON-lines slices D|τ, fact validation, the block scanner."""
