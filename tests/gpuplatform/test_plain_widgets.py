"""The plain widget renderer writes what Django's widget templates write, byte for byte."""

from __future__ import annotations

import datetime

import pytest
from django import forms
from django.forms.renderers import DjangoTemplates
from django.utils.safestring import mark_safe

from gpuplatform.plain_widgets import PLAIN_WIDGETS, PlainWidgets, printed

CHOICES = [
    ("", "any"),
    ("a&b", 'Tom\'s "quoted" <b>'),
    ("safe", mark_safe("<i>safe label</i>")),
    (3, "three"),
    ("Group <1>", [("g1", "first"), ("g2", "second & more")]),
]


class EveryWidget(forms.Form):
    plain = forms.ChoiceField(choices=CHOICES, required=False)
    required = forms.ChoiceField(choices=CHOICES)
    many = forms.MultipleChoiceField(choices=CHOICES, required=False)
    text = forms.CharField(required=False, max_length=20, label="Owner")
    disabled = forms.CharField(required=False, disabled=True)
    hidden = forms.CharField(required=False, widget=forms.HiddenInput)
    number = forms.IntegerField(required=False)
    day = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    flag = forms.CharField(required=False, widget=forms.TextInput(attrs={"autofocus": True}))
    off = forms.CharField(required=False, widget=forms.TextInput(attrs={"readonly": False}))
    radio = forms.ChoiceField(choices=[("x", "X"), ("y", "Y")], widget=forms.RadioSelect)
    notes = forms.CharField(required=False, widget=forms.Textarea)


BOUND = [
    None,
    {},
    {
        "plain": "a&b",
        "required": "g2",
        "many": ["safe", "3", "g1"],
        "text": "a\"b<c>&'d",
        "hidden": "<h>",
        "number": "12345",
        "day": "2026-11-26",
        "flag": "x",
        "radio": "y",
        "notes": "<n>",
    },
    {"plain": "nope", "number": "x", "day": "not a date", "text": "x" * 30},
]


@pytest.mark.parametrize("data", BOUND)
def test_each_field_renders_as_djangos_templates_render_it(data):
    ours = EveryWidget(data, initial={"text": "ini&tial", "day": datetime.date(2026, 1, 2)})
    ours.renderer = PLAIN_WIDGETS
    theirs = EveryWidget(data, initial={"text": "ini&tial", "day": datetime.date(2026, 1, 2)})
    theirs.renderer = DjangoTemplates()
    if data is not None:
        ours.is_valid(), theirs.is_valid()
    for name in EveryWidget.base_fields:
        assert str(ours[name]) == str(theirs[name]), name
    assert str(ours) == str(theirs)


def test_only_selects_and_inputs_skip_the_templates(monkeypatch):
    used = []
    original = DjangoTemplates.render

    def spy(self, template_name, context, request=None):
        used.append(template_name)
        return original(self, template_name, context, request)

    monkeypatch.setattr(DjangoTemplates, "render", spy)
    form = EveryWidget({"plain": "a&b"})
    form.renderer = PlainWidgets()
    for name in ("plain", "many", "text", "hidden", "number", "day"):
        str(form[name])
    assert used == []
    str(form["radio"]), str(form["notes"])
    assert used == ["django/forms/widgets/radio.html", "django/forms/widgets/textarea.html"]


@pytest.mark.parametrize(
    "value", [1234567, 0, True, None, 1.5, "a<b>", mark_safe("<b>"), datetime.date(2026, 1, 2)]
)
def test_printed_is_what_a_template_variable_prints(value):
    from django.template import Context, Template

    assert printed(value) == Template("{{ value }}").render(Context({"value": value}))
