"""The summary row's edit form."""

from __future__ import annotations

from django import forms
from django.contrib.admin import widgets

from summaries.models import Summary


class NormalizedTextField(forms.CharField):
    """Browsers send textarea lines ending in CRLF; store LF, as the
    summarizer writes, so saving an untouched text is no change at all."""

    def to_python(self, value):
        value = super().to_python(value)
        return value.replace("\r\n", "\n").replace("\r", "\n")


class SummaryForm(forms.ModelForm):
    content = NormalizedTextField(widget=widgets.AdminTextareaWidget(attrs={"rows": 14}))
    # The row's ``updated_at`` when the page was drawn. A pass that lands
    # while someone edits (an automatic update, a regeneration, another
    # person's edit) is not silently replaced by a text written against
    # the older version.
    loaded_version = forms.CharField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = Summary
        fields = ("content",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["loaded_version"].initial = self.current_version()

    def current_version(self) -> str:
        return self.instance.updated_at.isoformat()

    def clean(self) -> dict:
        cleaned = super().clean()
        loaded = cleaned.get("loaded_version")
        stale = bool(self.instance.pk and loaded and loaded != self.current_version())
        if stale and "content" in self.changed_data:
            # Submitting again (after reading the current text) saves the edit.
            self.data = self.data.copy()
            self.data["loaded_version"] = self.current_version()
            raise forms.ValidationError(
                "This row changed after you opened it. Its text is now: \u201c%(current)s\u201d "
                "(episodes %(range)s). Save again to replace it with yours.",
                code="stale",
                params={"current": self.instance.content, "range": self.instance.episode_range},
            )
        return cleaned
