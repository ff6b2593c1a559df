"""Escaping of text that reaches the page: the one place the app turns text into markup.

Every string that comes from a file (a store's manifest, a data set's words or notes), a path
typed by the user or an exception's message is text, never markup. The app writes it into its
panes only through these helpers:

- :func:`esc` for HTML panes, HTML attributes and the toast notifications (Panel's notyf area
  renders its message as HTML);
- :func:`md_esc` for Markdown panes (``pn.pane.Markdown``, ``pn.pane.Alert``): Markdown passes raw
  HTML through, and its own syntax (links, images, emphasis) would also be live, so every ASCII
  punctuation character is written as a numeric character reference, which Markdown shows as the
  character itself and never parses as syntax;
- :func:`choice_labels` for the labels of a ``pn.widgets.MultiChoice`` (BokehJS renders them with
  Choices.js as HTML).

Plain-text sinks (Bokeh titles, axis labels, legends, ``Select`` options, hover values) are text
in the browser already and need nothing.
"""
from __future__ import annotations

import html
import string

__all__ = ["esc", "md_esc", "choice_labels"]

_MD_SPECIAL = {ord(c): f"&#{ord(c)};" for c in string.punctuation}


def esc(value) -> str:
    """``str(value)`` as HTML text, safe in element content and in quoted attributes
    (``& < > " '`` become character references)."""
    return html.escape(str(value), quote=True)


def md_esc(value) -> str:
    """``str(value)`` as Markdown source that renders as exactly that text: no HTML element, no
    link, no emphasis (every ASCII punctuation character becomes ``&#N;``; line breaks are kept)."""
    return str(value).translate(_MD_SPECIAL)


def choice_labels(values) -> dict:
    """Options for a ``pn.widgets.MultiChoice`` whose values are untrusted text: ``{escaped
    label: value}``, so the widget shows each value as text and still returns the values."""
    return {esc(v): v for v in values}
