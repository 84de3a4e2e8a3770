"""`python -m reasoning.cli`: the engine's commands."""
import sys

from reasoning.cli.main import main

sys.exit(main())
