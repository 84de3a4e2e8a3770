"""Lake layer 2, ingest and validation of slices D|τ: producer files, data quality, generated workloads."""
