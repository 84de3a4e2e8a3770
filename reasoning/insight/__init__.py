"""Layer 5, insight into answers: confidence levels (002 §8), lifecycles, the HTML report."""
