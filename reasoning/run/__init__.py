"""Layer 6, one continuous query over a stream: the session, `--changes`, confidence pruning, the run's report."""
