"""The only package that knows the byte layout of an rcfmt file (see docs/FORMAT.md)."""
