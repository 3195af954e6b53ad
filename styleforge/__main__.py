"""`python -m styleforge` = the `styleforge` command."""
from .cli import entry

entry()
