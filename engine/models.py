"""What a run leaves in the database: the Run, its journal, periodic snapshots, its Turns with every model call and
message, its Effects, and the API tokens that may touch runs.

The journal is the truth: a Run's row, its snapshots and its Turn records are written in the same transaction as
the journal entries they follow from (engine/runtime/store.py), so a run can always be rebuilt from its latest
snapshot plus the journal after it.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = [
    "Run",
    "JournalEntry",
    "RunSnapshot",
    "TurnRecord",
    "TurnMessage",
    "ModelCall",
    "EffectRecord",
    "ApiToken",
    "Seat",
    "RunInput",
    "GateRecord",
    "GateAssignee",
    "RunMark",
    "RunText",
    "new_run_id",
]

ID_ALPHABET = "abcdefghijkmnopqrstuvwxyz23456789"


class StatusChoices(models.TextChoices, enum.StrEnum):
    """The base of every status below: a `TextChoices`, which Django 5.2 makes an `enum.StrEnum`, so a member is
    its stored string (in rows, JSON and messages alike). Naming `StrEnum` again changes nothing at run time; it lets
    the type checker, which has no types for Django, read the members as the enum they are."""


#: How many characters a run's id has, and how many ids there are.
RUN_ID_LENGTH = 10
_RUN_IDS = len(ID_ALPHABET) ** RUN_ID_LENGTH


def new_run_id() -> str:
    """A short id that is safe in URLs and easy to read aloud (no 0/o, 1/l): 10 characters, ~50 bits. Drawn as one
    number below 33^10, written in the alphabet's digits: the same uniform draw as a choice per character, from one
    or two reads of the system's randomness instead of about twenty (2 us an id instead of 14)."""
    number = secrets.randbelow(_RUN_IDS)
    digits = []
    for _ in range(RUN_ID_LENGTH):
        number, digit = divmod(number, len(ID_ALPHABET))
        digits.append(ID_ALPHABET[digit])
    return "".join(digits)


class Run(models.Model):
    """One execution of a Workflow, from its door to a final state, a failure or a cancel."""

    class Status(StatusChoices):
        RUNNING = "running", "running"
        WAITING = "waiting", "waiting"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"
        DRIFTED = "drifted", "drifted"

    LIVE = (Status.RUNNING, Status.WAITING)

    id = models.CharField(primary_key=True, max_length=16, default=new_run_id, editable=False)
    workflow = models.CharField(max_length=200)
    digest = models.CharField(max_length=64, help_text="the Machine's shape digest when the run was written")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    input = models.JSONField(null=True, blank=True, help_text="the door input, as validated")
    output = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="why the run failed or drifted, in words")
    view = models.JSONField(
        default=dict,
        blank=True,
        help_text="the run as readers see it after its last step: state value, context, open "
        "Gates, open Turns with their Allowed picks, running Effects",
    )
    seq = models.PositiveIntegerField(default=0, help_text="the sequence number of the last journal entry")
    scripted = models.BooleanField(default=False, help_text="some Agent of the run is played by a scripted model")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="forks",
        db_index=False,
        help_text="the run this one was forked from",
    )
    parent_step = models.PositiveIntegerField(
        null=True, blank=True, help_text="the parent's journal entry the fork started from"
    )
    imported_from = models.CharField(
        max_length=16,
        blank=True,
        default="",
        help_text="the run's id where it was exported from: an imported run is "
        "read-only, never hosted, resumed, answered or cancelled",
    )
    lease_owner = models.CharField(max_length=100, blank=True, default="")
    lease_expires = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        # Declared here, not with `db_index`: on PostgreSQL a text field's `db_index` adds a second index for LIKE
        # (varchar_pattern_ops) that nothing queries, and every step's UPDATE of the row paid for both.
        indexes = [
            models.Index(fields=["workflow"], name="run_workflow"),
            models.Index(fields=["status"], name="run_status"),
            models.Index(fields=["lease_owner"], name="run_lease_owner"),
            models.Index(fields=["parent"], name="run_parent"),
        ]
        permissions = [
            ("start_run", "Can start runs"),
            ("answer_gate", "Can answer Gates"),
            ("cancel_run", "Can cancel runs"),
            ("play_seat", "Can play an Agent's seat in a run"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} {self.id} ({self.status})"

    @property
    def imported(self) -> bool:
        return bool(self.imported_from)

    @property
    def live(self) -> bool:
        """Running or waiting and driven here: an imported run keeps the status it was exported with, but nothing
        moves it."""
        return self.status in self.LIVE and not self.imported


class JournalEntry(models.Model):
    """One accepted input of the run's Session (or a mark the host writes for itself, such as an Effect having
    started), with the digest of what it produced and the wall-clock time it was committed."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="journal", db_index=False)
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32)
    entry = models.JSONField()
    out = models.CharField(max_length=32, blank=True, default="")
    at = models.DateTimeField()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="journal_seq_unique")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.kind}"


class RunSnapshot(models.Model):
    """The whole Session (`Session.to_json()`) after journal entry `seq`: a resume starts here."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="snapshots", db_index=False)
    seq = models.PositiveIntegerField()
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "-seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="snapshot_seq_unique")]


class TurnRecord(models.Model):
    """One Agent Turn: who played it (model, provider, scripted or not), its Dials, its conversation, its totals."""

    class Status(StatusChoices):
        OPEN = "open", "open"
        ENDED = "ended", "ended"
        FAULTED = "faulted", "faulted"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="turns", db_index=False)
    turn = models.CharField(max_length=120, help_text="the Session's Turn id, e.g. turn-3 or scouting/turn-5")
    agent = models.CharField(max_length=120)
    state = models.CharField(max_length=300)
    model = models.CharField(max_length=200, help_text="what played the Turn: <provider>/<model id>")
    declared_model = models.CharField(max_length=200, help_text="the model the workflow declares")
    scripted = models.BooleanField(default=False)
    dials = models.JSONField(default=dict, blank=True)
    conversation = models.CharField(max_length=160, help_text="Turns that continue share a conversation")
    prompt = models.TextField(blank=True)
    system = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    reason = models.TextField(blank=True, help_text="why the Turn faulted")
    pending_call = models.CharField(
        max_length=120, blank=True, default="", help_text="the tool call whose pick is outstanding"
    )
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "started_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "turn"], name="turn_unique")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.turn} ({self.agent})"


class TurnMessage(models.Model):
    """One message of a conversation, in the neutral form of engine/runtime/providers/base.py: prompts, the model's
    replies (tool calls = picks), tool results (answers and refusals), notices, re-prompts."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="messages", db_index=False)
    turn = models.ForeignKey(TurnRecord, on_delete=models.CASCADE, related_name="messages")
    conversation = models.CharField(max_length=160)
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16)
    kind = models.CharField(
        max_length=32, help_text="prompt, reply, tool_result, refusal, reprompt, allowed_changed, notice"
    )
    content = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "conversation", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "conversation", "seq"], name="message_seq_unique")]


class ModelCall(models.Model):
    """One request to a model and its response: what was sent (by reference to the conversation), what came
    back, tokens, latency and why it stopped."""

    class Status(StatusChoices):
        IN_FLIGHT = "in_flight", "in flight"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        INTERRUPTED = "interrupted", "interrupted"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="model_calls", db_index=False)
    turn = models.ForeignKey(TurnRecord, on_delete=models.CASCADE, related_name="model_calls")
    seq = models.PositiveIntegerField(help_text="the call's number in the run")
    model = models.CharField(max_length=200)
    scripted = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IN_FLIGHT)
    request = models.JSONField(help_text="system, tools hash, dials, and the conversation up to `messages`")
    messages = models.PositiveIntegerField(help_text="how many messages of the conversation were sent")
    response = models.JSONField(null=True, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    stop_reason = models.CharField(max_length=40, blank=True, default="")
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="model_call_seq_unique")]


class EffectRecord(models.Model):
    """One Effect of a run: what it was asked to do, and whether it started and finished (both journaled)."""

    class Status(StatusChoices):
        REQUESTED = "requested", "requested"
        STARTED = "started", "started"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="effects", db_index=False)
    effect = models.CharField(max_length=120)
    slot = models.CharField(max_length=120)
    kind = models.CharField(max_length=16)
    state = models.CharField(max_length=300)
    spec = models.JSONField(default=dict, blank=True)
    input = models.JSONField(null=True, blank=True)
    idempotent = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    attempts = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    requested_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "requested_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "effect"], name="effect_unique")]


class ApiToken(models.Model):
    """A bearer token for the JSON API: shown once when created, stored only as a hash, revocable. It carries its
    user's permissions."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=12, help_text="the first characters, to tell tokens apart")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    PREFIX = "jr2_"
    #: How many characters of a key are kept (`prefix`) to find its record.
    PREFIX_LENGTH = 10

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @staticmethod
    def digest(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def issue(cls, user: object, name: str = "") -> tuple[ApiToken, str]:
        """A new token for `user`: the record and the key, which is shown once and never stored."""
        key = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, prefix=key[: cls.PREFIX_LENGTH], key_hash=cls.digest(key))
        return token, key


class LoginLink(models.Model):
    """A one-time link that logs its user in without a password: the first start's, or one an admin makes for a
    colleague (`jr2 login-link`). Used once, expires after `LIFETIME`, stored only as a hash."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_links")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    LIFETIME = dt.timedelta(minutes=15)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"login link for {self.user} (until {self.expires_at:%Y-%m-%d %H:%M})"

    @classmethod
    def issue(cls, user: object) -> str:
        """A new link's key for `user`; only its hash is kept."""
        key = secrets.token_urlsafe(32)
        cls.objects.create(user=user, key_hash=ApiToken.digest(key), expires_at=timezone.now() + cls.LIFETIME)
        return key

    @classmethod
    def redeem(cls, key: str) -> LoginLink | None:
        """The link of `key` if it is unused and unexpired, marked used, in one update: two uses at once give it to
        exactly one of them. None otherwise."""
        now = timezone.now()
        found = cls.objects.filter(key_hash=ApiToken.digest(key), used_at=None, expires_at__gt=now)
        link = found.select_related("user").first()
        if link is None or not found.filter(pk=link.pk).update(used_at=now):
            return None
        return link


class Seat(models.Model):
    """A person playing an Agent's seat in a run, from the Console: while held, that Agent's Turns come to them
    instead of its model."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="seats", db_index=False)
    agent = models.CharField(max_length=120)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="seats")
    taken_at = models.DateTimeField(auto_now_add=True)
    given_back_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "taken_at"]
        indexes = [models.Index(fields=["run"], name="seat_run")]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "agent"], condition=models.Q(given_back_at=None), name="one_holder_per_seat"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} plays {self.agent} in {self.run_id}"


class RunInput(models.Model):
    """An outside input (a Gate answer, a cancel, a seat change, a seat's pick) sent to a run by a person: checked
    against the run's committed view, then kept here durably and in order until the host holding the run's lease
    delivers it. That host settles it (delivered, or refused with the reason in words) in the same transaction as
    the step it caused, so it is delivered exactly once even when workers die, and never withdrawn: the sender
    reads its outcome at `GET /api/runs/<run>/inputs/<id>`."""

    class Status(StatusChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        REFUSED = "refused", "refused"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="inputs", db_index=False)
    kind = models.CharField(max_length=16)
    args = models.TextField(
        default="{}",
        help_text="the input's arguments as JSON text, exactly as sent (not jsonb, "
        "which cannot hold the NUL character: the run refuses such an input in words)",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True, default="", help_text="why it was refused, in words")
    sent_by = models.CharField(max_length=150, blank=True, default="", help_text="the username of who sent it")
    outcome = models.JSONField(null=True, blank=True, help_text="what the run answered, as the sender reads it")
    answered_by = models.CharField(max_length=100, blank=True, help_text="the host that delivered or refused it")
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True, help_text="when it was delivered or refused")

    class Meta:
        ordering = ["run", "id"]
        indexes = [
            models.Index(fields=["status", "run"], name="run_input_pending"),
            models.Index(fields=["run"], name="run_input_run"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.run_id} ({self.status})"


# -- what the Gate inbox and the runs search read (written by engine/runtime/index.py with each step) ----------------


class GateRecord(models.Model):
    """One opening of a Gate in a run, until it closes: the inbox lists the open ones (with how long they waited),
    and a closed one says how and by whom it was answered. A Gate that opens again gets a new record."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="gate_records", db_index=False)
    workflow = models.CharField(max_length=200, help_text="the run's workflow, so the inbox filters without a join")
    gate = models.CharField(max_length=300, help_text="the Gate's id, e.g. writing.asking")
    state = models.CharField(max_length=300, help_text="the state that invokes it")
    accepts = models.JSONField(default=list, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    event = models.CharField(max_length=120, blank=True, default="", help_text="the event that answered it")
    answered_by = models.CharField(
        max_length=150,
        blank=True,
        default="",
        help_text="who answered it (a username), empty when unknown or not answered",
    )
    answered_door = models.CharField(
        max_length=20, blank=True, default="", help_text="the door the answer came in by: console, api, cli, mcp, link"
    )
    assign = models.JSONField(
        null=True, blank=True, help_text='whom it is assigned to ("user:ann", "group:leads"); null: anyone'
    )
    assigned = models.BooleanField(default=False, help_text="it has an assign: only those named (and superusers)")
    claimed_by = models.CharField(max_length=150, blank=True, default="", help_text="who holds its claim")
    claimed_until = models.DateTimeField(null=True, blank=True, help_text="when that claim ends")
    due_at = models.DateTimeField(
        null=True, blank=True, help_text="when the Machine's `after` on its state fires (the inbox sorts by it)"
    )

    class Meta:
        ordering = ["opened_at", "id"]
        indexes = [
            models.Index(fields=["closed_at", "workflow", "gate"], name="gate_open_kind"),
            models.Index(fields=["run"], name="gate_record_run"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "gate"], condition=models.Q(closed_at=None), name="one_open_gate_record"
            )
        ]

    def __str__(self) -> str:
        return f"{self.run_id} {self.gate} ({'open' if self.closed_at is None else 'closed'})"


class RunMark(models.Model):
    """One fact about a run that search filters on: a state it is in (`in`), a state it passed through
    (`passed`), an event it took (`event`), an Agent that took a Turn in it (`agent`)."""

    class Kind(models.TextChoices):
        IN = "in", "in"
        PASSED = "passed", "passed"
        EVENT = "event", "event"
        AGENT = "agent", "agent"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="marks", db_index=False)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=300)

    class Meta:
        indexes = [models.Index(fields=["kind", "name", "run"], name="mark_lookup")]
        constraints = [models.UniqueConstraint(fields=["run", "kind", "name"], name="mark_unique")]


class RunText(models.Model):
    """The words of a run's door input and output, case-folded, for "a text in the input or output" (the JSON
    columns hold escapes, keys and punctuation a person does not search for)."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="text")
    input = models.TextField(blank=True, default="")
    output = models.TextField(blank=True, default="")


class GateAssignee(models.Model):
    """One name a Gate's opening is assigned to (a user or a group), so the inbox filters by who may answer."""

    class Kind(models.TextChoices):
        USER = "user"
        GROUP = "group"

    record = models.ForeignKey(GateRecord, on_delete=models.CASCADE, related_name="assignees")
    kind = models.CharField(max_length=5, choices=Kind.choices)
    name = models.CharField(max_length=150)

    class Meta:
        indexes = [models.Index(fields=["kind", "name"], name="gate_assignee_name")]
        constraints = [models.UniqueConstraint(fields=["record", "kind", "name"], name="one_gate_assignee")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


# The outbox of webhooks and emails, and one-tap links (engine/outbox.py), are models of this app too.
from engine.outbox import Delivery, EmailNotice, GateLink, GateLinkUse, WebhookEndpoint  # noqa: E402

__all__ += ["Delivery", "EmailNotice", "GateLink", "GateLinkUse", "WebhookEndpoint"]
