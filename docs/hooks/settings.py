"""mkdocs hook: the settings page names every field of ``plugin.settings.Settings``.

The table on ``operating/settings.md`` is written by hand (defaults with their reasons); this check
fails the build when a field has no row, so a new setting cannot go undocumented.
"""
from __future__ import annotations

from typing import Any

from mkdocs.exceptions import PluginError

PAGE = "operating/settings.md"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    from plugin.settings import Settings  # the repo root is on sys.path (hooks/openapi.py)

    prefix = Settings.model_config.get("env_prefix", "")
    missing = [f"{prefix}{name}".upper() for name in Settings.model_fields
               if f"`{prefix}{name}`".upper() not in markdown.upper()]
    if missing:
        raise PluginError(f"{PAGE} has no row for {', '.join(missing)}")
    return markdown
