"""Lake layer 1, table I/O: Delta logs (delta-rs), the lake's store, damage detection, S_τ's table format."""
