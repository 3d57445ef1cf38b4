"""The desk: the page at ``/desk`` where fact-checkers review FactSieve's matches.

Server-rendered Jinja templates and two small static scripts (htmx 2, vendored from npm with its
licence, and ``desk.js`` for the keyboard): no build step, no CDN. Every decision is one request
to ``ReviewDesk.decide`` (``plugin.review``), the same call as ``POST /v1/review/decisions``, with
the reviewer's API key name as the actor and ``origin="desk"``. Sessions and CSRF:
``api.desk.sessions``; what the forms mean: ``api.desk.present``.
"""
from __future__ import annotations

from api.desk import claims as _claims  # noqa: F401 - registers the claims pages on the blueprint
from api.desk.views import desk

__all__ = ["desk"]
