"""Which function shows a result as text or as HTML: ``print(result)``, ``result.to_html()``
and Jupyter's ``_repr_html_`` ask here.

A result (``Analysis``, ``RunDiff``, ``ClusterAnalysis``...) does not import its renderer:
the renderer imports the result, to read it, so the dependency runs one way. ``renderers``
registers each result type's functions; it imports every result, so no result can import it,
and it is imported here, by name, on the first look-up: this is the one place that names it.
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Callable
from typing import Any

RENDERERS = "tftrace.analysis.renderers"  # registers a renderer for every result type

Show = Callable[[Any], str]
_shown: dict[tuple[type, str], Show] = {}


def register(kind: type, *, text: Show, html: Show | None = None) -> None:
    """Show a ``kind`` (or a subclass) with ``text`` as text and ``html`` as HTML."""
    _shown[kind, "text"] = text
    if html is not None:
        _shown[kind, "html"] = html


def _find(result: object, form: str) -> Show | None:
    importlib.import_module(RENDERERS)  # registers them all, once
    for kind in type(result).__mro__:
        if (kind, form) in _shown:
            return _shown[kind, form]
    return None


def as_text(result: object) -> str:
    """``result`` as its registered renderer writes it for the terminal; else its repr."""
    show = _find(result, "text")
    return show(result) if show is not None else repr(result)


def as_html(result: object) -> str:
    """``result`` as its registered renderer writes it in HTML; else its repr, escaped."""
    show = _find(result, "html")
    return show(result) if show is not None else f"<pre>{html.escape(repr(result))}</pre>"
