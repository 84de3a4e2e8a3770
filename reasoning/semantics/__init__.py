"""Layer 2, what an answer is: ⟨P, θ, E, H⟩ (002 Def. 5), compiled templates, regions, exact instances, answer keys and explanations, the reference evaluator."""
