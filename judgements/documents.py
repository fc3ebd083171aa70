"""Untrusted document bodies made safe for a rater's page: one sanitiser for the pages and the API."""

from __future__ import annotations

import re
from html import escape

import nh3
from django.utils.safestring import SafeString, mark_safe

#: Tags a document body may keep; everything else is stripped (its text kept), see `CLEAN_CONTENT`.
ALLOWED_TAGS = frozenset(
    {"p", "br", "ul", "ol", "li", "b", "i", "em", "strong", "code", "pre", "blockquote", "h1", "h2", "h3",
     "h4", "h5", "h6", "a", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption"}
)  # fmt: skip
#: Tags removed together with their content.
CLEAN_CONTENT = frozenset(
    {"script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math", "textarea",
     "select", "frame", "frameset", "title", "head"}
)  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan"}}
_TAG_NAMES = "|".join(sorted(ALLOWED_TAGS | CLEAN_CONTENT | {"div", "span", "img", "hr", "body", "html"}))
#: A body "looks like HTML" if it has a closing tag, or an opening tag with no attribute or with `name=`
#: attributes, of a known HTML element: `<object object>` in a docstring's signature is text.
_LOOKS_HTML = re.compile(rf"</(?:{_TAG_NAMES})\s*>|<(?:{_TAG_NAMES})(?:\s+[\w:-]+\s*=[^<>]*)*\s*/?>", re.I)
_BLOCK_TAG = re.compile(r"<(?:p|br|div|ul|ol|li|pre|table|h[1-6]|blockquote|hr|dl)\b", re.I)


def render_body(text: str) -> SafeString:
    """A document body as safe HTML for the rater's page.

    Plain text (no HTML element in it) is escaped and kept verbatim in `<pre class="doc-text">`, line
    breaks and indentation included. HTML goes through `nh3.clean` with `ALLOWED_TAGS` and
    `ALLOWED_ATTRIBUTES`: no script, style, event handler, image, frame or form survives; links keep an
    absolute http(s) or mailto `href` only, open in a new tab and get rel="noopener noreferrer nofollow".
    HTML with no block element keeps its line breaks too (`class="doc-text"` is white-space: pre-wrap)."""
    if not _LOOKS_HTML.search(text):
        return mark_safe(f'<pre class="doc-text">{escape(text)}</pre>')  # noqa: S308 (escaped above)
    cleaned = nh3.clean(
        text,
        tags=set(ALLOWED_TAGS),
        clean_content_tags=set(CLEAN_CONTENT),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes={"http", "https", "mailto"},
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        strip_comments=True,
    )
    css = "doc-html" if _BLOCK_TAG.search(cleaned) else "doc-html doc-text"
    return mark_safe(f'<div class="{css}">{cleaned}</div>')  # noqa: S308 (sanitised by nh3)


def safe_link(url: str) -> str | None:
    """The document's URL if it may be a link (absolute http or https), else None (shown as text)."""
    return url if re.match(r"https?://", url or "", re.I) else None
