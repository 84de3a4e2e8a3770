"""Lake layer 4, maintenance: verify and vacuum."""
