"""Rendering: the only place results become text (rich), tables and charts."""
