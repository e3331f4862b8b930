"""The admin: users and groups (Django's own), API tokens, and runs to look at (runs change only through the
runtime, so they are read-only here), and the inputs people sent them, pending, delivered or refused."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone

from engine.models import ApiToken, Run, RunInput


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
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "status", "scripted", "created_at", "updated_at")
    list_filter = ("status", "workflow", "scripted")
    search_fields = ("id", "workflow", "reason")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


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
