"""The arrays executor of the set-at-a-time plan (ArraysBackend), one module a job.

The relational operations of backends/polars.py's interface over numpy columns of interned
integers, with compiled hash joins (kernels.py).

Why a second in-process executor: a turbine tick at 10⁴ devices is ~180 operations on
10³–10⁴ rows, and Polars' fixed cost of 100–250 µs an operation (bench/kernels.py) is most
of the tick.  Here a frame is a dict of numpy arrays; every object value (a constant) and
every list value (the `ng` nogood lists, aggregated lists) is interned once into an int64
id, so joins, distinct and group-by run on packed int64 keys, and a filter is a boolean
index per column (a few µs).  String and list operations work on the distinct ids of a
column, not on its rows; string-list operations on all of a column's distinct lists at once,
flattened (_segments), and a long list is held as an int64 array (ListTable), so the
schematic answer's exclusions over 10⁵ devices cost no Python object per element.

Column semantics are Polars' (the reference backend): nulls propagate through arithmetic
and comparisons, `&`/`|` are Kleene, a filter drops null conditions, min/max/coalesce skip
nulls, joins never match null keys unless nulls_equal.

A column is a Col: values `v` (int64 ids for OBJ/STRLIST/INTLIST, int64, bool or float64),
null mask `m` (True = null; None: no nulls) and its kind (layout.py's kinds).

The modules, lowest first:
  * frame.py: the frame model (Col, LazyCol, Frame; kinds, null masks);
  * intern.py: the interned tables (Symbols, ListTable: _SYM, _LST);
  * signatures.py: strings interned in bulk by hash signature (a compiled index);
  * values.py: columns to and from Python values, maps over a column's distinct values;
  * expr.py: the expression language (Ex, literals, operators' column operations);
  * segments.py: list and string operations on flattened lists, per-id memos;
  * keys.py: key columns packed for the compiled kernels (joins, membership, groups);
  * polars_io.py: frames from and to Polars (PolarsFrames, mixed into the backend);
  * functions.py: the interface's expression constructors (Expressions, mixed in);
  * domain.py: fused operations for the engine's own steps (DomainOps, mixed in);
  * sweep.py: freeing ids no live frame holds (Sweeping, mixed in);
  * backend.py: ArraysBackend, the relational operations (filters, joins, groups, …).
"""
from reasoning.columnar.backends.arrays.backend import ArraysBackend

__all__ = ["ArraysBackend"]
