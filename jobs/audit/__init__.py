"""Lake layer 4, audit: the lifecycle report of completed ticks."""
