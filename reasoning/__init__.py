"""hypo: a continuous-query reasoner over Temporal Datalog with negation.

The public API (docs/api.md), loaded on first use so that `import reasoning.language…` stays
cheap: `compile_program`, `compile_file`, `Reasoner`, `Tick`, `ProgramError`, `HypoError`."""
from __future__ import annotations

_API = ("compile_program", "compile_file", "CompiledProgram", "Reasoner", "Tick", "Rejection",
        "ProgramError", "HypoError", "ANSWER_FIELDS")
__all__ = list(_API)


def __getattr__(name: str):
    if name in _API:
        from reasoning import api

        return getattr(api, name)
    raise AttributeError(f"module 'reasoning' has no attribute {name!r}")
