"""Layer 1, the front end: grammar, parser, syntax, well-formedness, metric operators, periodic facts, analysis, pre-processing into P_Q (002 §2), compiler."""
