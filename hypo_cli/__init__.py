"""The `hypo` command line: the one layer that knows both the engine (reasoning/: `check`,
`run`) and the lakehouse pipeline (jobs/: `lake`).  reasoning/ never imports jobs/, and jobs/
never imports a command line."""
from __future__ import annotations

import sys
from typing import Optional


def main(argv: Optional[list[str]] = None) -> int:
    """`hypo lake …` goes to jobs.cli, every other command to reasoning.cli.main."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "lake":
        from jobs.cli import main as lake_main

        return lake_main(argv[1:])
    from reasoning.cli.main import main as engine_main

    return engine_main(argv)
