"""Algorithm 1 set-at-a-time (issue: set-at-a-time engine): one relational plan over S_τ,
D|τ and W as tables, executed in-process on Polars or as Spark joins (jobs/tick/spark_plan.py)."""
from reasoning.columnar.engine import ColumnarEngine, Unsupported

__all__ = ["ColumnarEngine", "Unsupported"]
