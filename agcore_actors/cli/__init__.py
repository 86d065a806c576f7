"""Command line: ``agcore-actors``."""

from ._main import main

__all__ = ["main"]
