"""Lake layer 3, the tick job: S_{τ-1} × D|τ → S_τ in process or on Spark."""
