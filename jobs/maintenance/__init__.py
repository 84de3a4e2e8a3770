"""Lake layer 4, maintenance: verify, vacuum and migrate."""
