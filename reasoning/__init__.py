"""hypo: a continuous-query reasoner over Temporal Datalog with negation."""
