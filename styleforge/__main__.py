"""`python -m styleforge` = the `styleforge` command."""
import sys

from .cli import main

sys.exit(main())
