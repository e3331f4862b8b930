"""The admin: users and groups (Django's own), API tokens, and runs to look at (runs change only through the
runtime, so they are read-only here), and the inputs people sent them, pending, delivered or refused."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone

from engine.models import ApiToken, Run, RunInput, WebhookEndpoint
from engine.outbox import KINDS


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created with `jr2 token create` (the key is shown once); here they are listed and revoked."""

    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "user__username", "name")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        from engine.web import tokens

        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        tokens.forget()  # this process refuses them at once; others within JR2_TOKEN_CACHE_SECONDS


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "status", "scripted", "created_at", "updated_at")
    list_filter = ("status", "workflow", "scripted")
    search_fields = ("id", "workflow", "reason")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class WebhookEndpointForm(forms.ModelForm):
    """An endpoint as the admin edits it: its kinds checked against the list; its secret written, never shown."""

    url = forms.URLField(max_length=500, assume_scheme="https", help_text="Where each delivery is POSTed.")
    secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="The HMAC key of X-Jr2-Signature, at least 8 characters. Left empty, the current one is kept.",
    )
    events = forms.MultipleChoiceField(choices=[(k, k) for k in KINDS], widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = WebhookEndpoint
        fields = ("name", "url", "secret", "events", "slack", "active")

    def clean_secret(self) -> str:
        secret = str(self.cleaned_data.get("secret") or "")
        if not secret and self.instance.pk:
            return str(self.instance.secret)
        if len(secret) < 8:
            raise forms.ValidationError("a secret of at least 8 characters signs each body")
        return secret


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    """Webhook endpoints; those of `JR2_WEBHOOKS` are listed too (source "settings") and kept from the setting.
    The delivery log is in the Console (/webhooks/)."""

    form = WebhookEndpointForm
    list_display = ("__str__", "url", "source", "active", "slack", "created_at")
    list_filter = ("source", "active")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.source == WebhookEndpoint.Source.SETTINGS:
            return False  # JR2_WEBHOOKS owns it: a change here would be undone at the next start
        return super().has_change_permission(request, obj)


@admin.register(RunInput)
class RunInputAdmin(admin.ModelAdmin):
    """The inputs people sent runs: an operator sees what waits for a worker and why one was refused. Only hosts
    settle them, so they are read-only here."""

    list_display = ("id", "run", "kind", "status", "sent_by", "created_at", "answered_at", "answered_by")
    list_filter = ("status", "kind")
    search_fields = ("run__id", "sent_by", "reason")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
