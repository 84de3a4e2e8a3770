"""The answers of S_τ set-at-a-time as printed lines and JSONL objects."""
