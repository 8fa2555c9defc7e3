"""A form renderer that writes selects and text inputs in Python, byte for byte what Django's
own widget templates make of the same context.

Django renders a select through its template and each option through a template of its own
(and each option's attributes through another): a filter form of a few selects with a dozen
options each was about a sixth of the jobs list's CPU. Only the templates below are written
here (``django/forms/widgets/select.html`` with ``select_option.html`` options, and the
``input.html`` family); any other template, and a select whose options use another template,
goes to Django's templates as before. The widgets' contexts are Django's own
(``Widget.get_context``): only the template engine is skipped.

Use: ``default_renderer = PLAIN_WIDGETS`` on a form class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.forms.renderers import DjangoTemplates
from django.utils.formats import localize
from django.utils.html import conditional_escape
from django.utils.safestring import SafeData, mark_safe

SELECT = "django/forms/widgets/select.html"
OPTION = "django/forms/widgets/select_option.html"
INPUTS = frozenset(
    f"django/forms/widgets/{name}.html"
    for name in ("input", "text", "date", "number", "email", "url", "search", "tel", "hidden")
)


def printed(value: Any) -> str:
    """What ``{{ value }}`` prints (autoescaping on): localized, then escaped unless safe."""
    if type(value) is int and not settings.USE_THOUSAND_SEPARATOR:
        return str(value)  # what localizing an int gives then, without looking up the language
    value = localize(value)
    return str(conditional_escape(value if isinstance(value, str) else str(value)))


def _formatted(value: Any) -> str:
    """``{{ value|stringformat:'s' }}`` (the filter keeps a safe value safe)."""
    if isinstance(value, tuple):
        value = str(value)
    try:
        text = "%s" % value  # noqa: UP031 -- what the filter does
    except (ValueError, TypeError):
        text = ""
    if isinstance(value, SafeData):
        text = mark_safe(text)
    return printed(text)


def _attrs(attrs: Mapping[str, Any]) -> str:
    """``django/forms/widgets/attrs.html``."""
    out = []
    for name, value in attrs.items():
        if value is False:
            continue
        out.append(
            f" {printed(name)}" if value is True else f' {printed(name)}="{_formatted(value)}"'
        )
    return "".join(out)


def _select(widget: Mapping[str, Any]) -> str | None:
    parts = [f'<select name="{printed(widget["name"])}"{_attrs(widget["attrs"])}>']
    for group_name, options, _index in widget["optgroups"]:
        if group_name:
            parts.append(f'\n  <optgroup label="{printed(group_name)}">')
        for option in options:
            if option["template_name"] != OPTION:
                return None
            parts.append(
                f'\n  <option value="{_formatted(option["value"])}"{_attrs(option["attrs"])}>'
                f"{printed(option['label'])}</option>\n"
            )
        if group_name:
            parts.append("\n  </optgroup>")
    parts.append("\n</select>")
    return "".join(parts)


def _input(widget: Mapping[str, Any]) -> str:
    value = widget["value"]
    shown = f' value="{_formatted(value)}"' if value != None else ""  # noqa: E711 -- {% if != None %}
    return (
        f'<input type="{printed(widget["type"])}" name="{printed(widget["name"])}"{shown}'
        f"{_attrs(widget['attrs'])}>"
    )


class PlainWidgets(DjangoTemplates):
    """Django's default form renderer, with selects and text inputs written without templates."""

    def render(self, template_name: str, context: dict[str, Any], request: Any = None) -> str:
        html = None
        if template_name == SELECT:
            html = _select(context["widget"])
        elif template_name in INPUTS:
            html = _input(context["widget"])
        if html is None:
            return str(super().render(template_name, context, request))
        return html.strip()


PLAIN_WIDGETS = PlainWidgets()
