"""What one answer and one tick are: a schematic hypothetical answer ⟨P, θ, E, H⟩
(002 Def. 15) and a tick's report (Algorithm 1's output)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from reasoning.semantics.patterns import Binding


class Answer(NamedTuple):
    """A schematic hypothetical answer ⟨P, θ, E, H⟩ (Def. 15); E ∪ H is the template's H."""

    tid: int
    b: Binding
    ev: frozenset  # indices of template literals in E
    ng: frozenset  # nogoods: frozenset of tuples of (var index, value)


@dataclass
class TickReport:
    """What one tick produced: the answer set before forgetting, and what changed."""

    tick: int
    accepted: int = 0
    duplicates: int = 0
    duplicate_facts: list = field(default_factory=list)  # facts of D|τ that had already arrived
    snapshot: list = field(default_factory=list)  # Answers of S_τ (before forgetting)
    new_definite: list = field(default_factory=list)  # main-query Answers definite this tick
    state_size: int = 0
