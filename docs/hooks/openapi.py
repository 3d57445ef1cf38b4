"""mkdocs hook: the HTTP API reference, rendered at build time from the app's own OpenAPI document.

A page that holds the marker ``<!-- openapi -->`` gets every route and schema of the document
``GET /openapi.json`` serves, as Markdown. The document comes from ``api.create_app``, which
connects to nothing (OpenSearch, Redis and the model are built lazily), so the build needs no
running service; a route declared with ``api.routing.route`` appears here without touching the docs.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- openapi -->"
_SCHEMA_PREFIX = "#/components/schemas/"


def on_config(config: Any) -> Any:
    root = str(Path(config["config_file_path"]).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render(openapi_document()))


def openapi_document() -> dict[str, Any]:
    """The document ``GET /openapi.json`` answers with."""
    from api import create_app
    from plugin.settings import Settings

    return create_app(Settings()).extensions["factsieve.openapi"]


def render(spec: dict[str, Any]) -> str:
    out: list[str] = []
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method.upper(), path, op))
    for tag, ops in by_tag.items():
        out.append(f"## {tag}\n")
        for method, path, op in ops:
            out.extend(_operation(method, path, op))
    out.append("## Schemas\n")
    for name, schema in spec["components"]["schemas"].items():
        out.extend(_schema_section(name, schema))
    return "\n".join(out)


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    scope = op.get("x-factsieve-scope")
    lines = [f"### {method} `{path}` {{#{_slug('op-' + op['operationId'])}}}\n",
             f"{op.get('summary', '')}. Scope: " + (f"`{scope}`." if scope else "public, no key.") + "\n"]
    if op.get("description"):
        lines.append(op["description"] + "\n")
    params = op.get("parameters") or []
    if params:
        lines += ["| parameter | in | type | |", "|---|---|---|---|"]
        lines += [f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} | {_cell(p.get('description', ''))} |"
                  for p in params]
        lines.append("")
    body = op.get("requestBody")
    if body:
        lines.append("Request body:\n")
        lines += [f"- `{ctype}`: {_type(media.get('schema', {}))}" for ctype, media in body["content"].items()]
        lines.append("")
    lines += ["| status | | body |", "|---|---|---|"]
    problems = []
    for code, resp in op["responses"].items():
        content = resp.get("content") or {}
        if set(content) == {"application/problem+json"}:
            problems.append(f"{code} {resp.get('description', '')}")
            continue
        bodies = ", ".join(f"{_type(m.get('schema', {}))} (`{c}`)" for c, m in content.items())
        lines.append(f"| {code} | {_cell(resp.get('description', ''))} | {bodies} |")
    if problems:
        lines.append(f"| errors | {_cell('; '.join(problems))} | [Problem](#{_slug('schema-Problem')}) "
                     "(`application/problem+json`) |")
    lines.append("")
    return lines


def _schema_section(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name} {{#{_slug('schema-' + name)}}}\n"]
    if schema.get("description"):
        lines.append(_one_paragraph(schema["description"]) + "\n")
    if "enum" in schema:
        lines.append("One of " + ", ".join(f"`{v}`" for v in schema["enum"]) + ".\n")
        return lines
    props = schema.get("properties") or {}
    if not props:
        lines.append(_type(schema) + "\n")
        return lines
    required = set(schema.get("required", ()))
    lines += ["| field | type | default | |", "|---|---|---|---|"]
    for field, prop in props.items():
        default = "required" if field in required else (f"`{prop['default']!r}`" if "default" in prop else "")
        lines.append(f"| `{field}` | {_type(prop)} | {_cell(default)} | {_cell(_description(prop))} |")
    lines.append("")
    return lines


def _type(schema: dict[str, Any]) -> str:
    """A schema as a few words: its type, what it refers to, and its bounds."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(_SCHEMA_PREFIX)
        return f"[{name}](#{_slug('schema-' + name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            kinds = [s for s in schema[key] if s.get("type") != "null"]
            text = " or ".join(_type(s) for s in kinds)
            return text + (" or null" if len(kinds) < len(schema[key]) else "")
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        text = "array of " + _type(schema.get("items", {}))
    elif isinstance(kind, list):
        text = " or ".join(kind)
    else:
        text = kind + (f" ({schema['format']})" if "format" in schema else "")
    bounds = [f"{label} {schema[key]}" for key, label in (
        ("minLength", "length ≥"), ("maxLength", "length ≤"), ("minimum", "≥"), ("exclusiveMinimum", ">"),
        ("maximum", "≤"), ("minItems", "items ≥"), ("maxItems", "items ≤")) if key in schema]
    return text + (f", {', '.join(bounds)}" if bounds else "")


def _description(prop: dict[str, Any]) -> str:
    if prop.get("description"):
        return prop["description"]
    for key in ("anyOf", "oneOf"):
        for sub in prop.get(key, ()):
            if sub.get("description"):
                return sub["description"]
    return ""


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _one_paragraph(str(text)).replace("|", "\\|")
