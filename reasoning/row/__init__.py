"""Layer 3, the row executor of Algorithm 1 (002 §6): the reference implementation of the online update."""
