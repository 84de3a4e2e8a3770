"""The layout's rule (docs/architecture.md): imports point one way, from the front end down to
the command line, and no module takes part in an import cycle — imports inside functions
included (a cycle broken only by a late import is still a cycle); an import under
`if TYPE_CHECKING:` names a type and loads nothing, so it is no edge.  `reasoning` never
imports `jobs`, `dags`, `hypo_cli` or pyspark."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reasoning", "jobs", "schemas", "hypo_cli", "dags")

# Layers, lowest first: a module may import its own layer or a lower one, never a higher one.
LAYERS = [
    ("reasoning.util", "reasoning.native"),
    ("reasoning.language",),
    ("reasoning.semantics",),
    ("reasoning.row",),
    ("reasoning.columnar",),
    ("reasoning.stream", "reasoning.insight"),
    ("reasoning.run",),
    ("reasoning.cli",),
    ("reasoning",),  # the public API (reasoning/__init__.py), over every layer
    ("schemas",),
    ("jobs",),  # jobs/__init__.py (empty): `from jobs import lake` loads it first
    ("jobs.errors",),
    ("jobs.table",),
    ("jobs.ingest",),
    ("jobs.tick",),
    ("jobs.maintenance", "jobs.audit"),
    ("jobs.lake",),
    ("jobs.cli",),
    ("hypo_cli",),
    ("dags",),
]
FORBIDDEN = {"reasoning": ("jobs", "dags", "hypo_cli", "pyspark", "delta", "airflow",
                           "great_expectations", "deltalake")}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            for m in n.body:
                lines.update(range(m.lineno, (m.end_lineno or m.lineno) + 1))
    return lines


def _imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports (absolute names; relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for n in ast.walk(tree):
        if getattr(n, "lineno", None) in skip:
            continue
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                parts = pkg.split(".")[:len(pkg.split(".")) - (n.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in n.names)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    g: dict[str, set[str]] = {}
    for name, path in mods.items():
        g[name] = set()
        for t in _imports(name, path):
            if t in mods and t != name:
                g[name].add(t)
            elif t not in mods and t.rpartition(".")[0] in mods and "." in t:
                pass  # a name imported from a module: its module is in the set already
    return g


def _layer(mod: str) -> int:
    best, rank = -1, None
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{mod}: in no layer of tests/test_architecture.py LAYERS"
    return rank


def test_every_module_has_a_layer():
    for mod in _modules():
        _layer(mod)


def test_imports_point_down():
    up = [f"{a} (layer {_layer(a)}) imports {b} (layer {_layer(b)})"
          for a, bs in sorted(_graph().items()) for b in sorted(bs) if _layer(b) > _layer(a)]
    assert not up, "imports pointing up a layer:\n" + "\n".join(up)


def test_reasoning_imports_no_lake_or_spark():
    bad = []
    for name, path in _modules().items():
        if not name.startswith("reasoning"):
            continue
        for t in _imports(name, path):
            if any(t == f or t.startswith(f + ".") for f in FORBIDDEN["reasoning"]):
                bad.append(f"{name} imports {t}")
    assert not bad, "\n".join(bad)


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, as the analysis of
    a program's dependency graph computes them)."""
    from reasoning.language.analysis import _sccs

    nodes = sorted(g)
    return sorted(sorted(c) for c in _sccs(nodes, {v: sorted(g[v]) for v in nodes}) if len(c) > 1)


def _package_edges(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's __init__ runs before any of its modules: importing reasoning.x.y also
    imports reasoning.x (and reasoning), so those count as edges of the importer."""
    out = {k: set(v) for k, v in g.items()}
    for a, bs in g.items():
        for b in bs:
            parts = b.split(".")
            for i in range(1, len(parts)):
                p = ".".join(parts[:i])
                if p in g and p != a and not a.startswith(p + "."):
                    out[a].add(p)
    return out


def test_no_import_cycles():
    cyc = _cycles(_package_edges(_graph()))
    assert not cyc, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in cyc)


def test_the_checker_sees_a_cycle_and_an_upward_edge():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert _layer("reasoning.language.parser") < _layer("reasoning.run.session")
    assert _layer("reasoning.columnar.render.answers") == _layer("reasoning.columnar")
