import sys

from hypo_cli import main

sys.exit(main())
