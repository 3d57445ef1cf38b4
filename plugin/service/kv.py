"""Moved to ``plugin.kv`` (an engine room, beside ``plugin.index``): this name stays only for
``services.py`` until it is rewritten."""
from plugin.kv import KV

__all__ = ["KV"]
