"""Who may use what: teams, memberships, cohorts, queues and their per-flavor quotas."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from gpuplatform import roles
from queues.models.validators import dns_label

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class TeamQuerySet(models.QuerySet["Team"]):
    def of_member(self, user: AbstractBaseUser | AnonymousUser) -> TeamQuerySet:
        """Teams the user belongs to (any role)."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user).distinct()

    def administered_by(self, user: AbstractBaseUser | AnonymousUser) -> TeamQuerySet:
        """Teams where the user is a team admin."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            memberships__user=user, memberships__role=Membership.Role.TEAM_ADMIN
        ).distinct()

    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> TeamQuerySet:
        """Teams the user may see: every team for platform admins and finance, their own teams
        for everyone else."""
        if roles.is_platform_admin_or_finance(user):
            return self.all()
        return self.filter(pk__in=Team.objects.of_member(user).values("pk"))


class Team(models.Model):
    # what people edit (the manage pages, the API) and the change history records
    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = ("name", "description")

    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        TEAM_ADMIN = "team_admin", "Team admin"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "team"],
                name="membership_unique_user_team",
                violation_error_message=(
                    "This user is already a member of this team; "
                    "change the existing membership's role instead."
                ),
            ),
            models.CheckConstraint(
                condition=Q(role__in=["member", "team_admin"]),
                name="membership_role_valid",
                violation_error_message="The role must be member or team_admin.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.get_role_display()})"


class Cohort(models.Model):
    """Queues of one cohort lend each other their unused quota (Kueue's meaning). A cohort may
    sit under a parent cohort and hold quota of its own (a tree: docs/SCHEDULING.md 2a)."""

    # what people edit (the manage pages, the API) and the change history records
    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = ("name", "description", "parent", "weight")

    name = models.CharField(max_length=63, unique=True, validators=[dns_label])
    description = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="children",
        help_text="The cohort this one borrows from and lends to; empty: a root.",
    )
    weight = models.FloatField(
        default=1.0,
        help_text="Fair-share weight (> 0) among its sibling cohorts and queues (Slurm's Fair "
        "Tree shares, Kueue's fairSharing.weight): 2 gets twice the share.",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(weight__gt=0),
                name="cohort_weight_positive",
                violation_error_message="The weight must be greater than 0.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """A positive weight; following parents never comes back to this cohort."""
        if self.weight is not None and self.weight <= 0:
            raise ValidationError(
                {"weight": "The weight must be greater than 0 (1 is the default)."}
            )
        seen = {self.pk} if self.pk is not None else set()
        parent = self.parent
        while parent is not None:
            if parent.pk in seen or parent.pk == self.pk:
                raise ValidationError(
                    {
                        "parent": (
                            f"Cohort {parent.name} is {self.name or 'this cohort'} itself or "
                            "below it: the parents would form a cycle."
                        )
                    }
                )
            seen.add(parent.pk)
            parent = parent.parent


class QueueQuerySet(models.QuerySet["Queue"]):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> QueueQuerySet:
        """Queues of the teams the user may see (one queue: ``Queue.is_visible_to``)."""
        return self.filter(team__in=Team.objects.visible_to(user))

    def submittable_by(self, user: AbstractBaseUser | AnonymousUser) -> QueueQuerySet:
        """Open queues the user may submit to: their teams' queues (every one for platform
        admins; one queue: ``Queue.takes_jobs_from``)."""
        queues = self.filter(is_open=True)
        if roles.is_platform_admin(user):
            return queues
        return queues.filter(team__in=Team.objects.of_member(user))


class Queue(models.Model):
    # what people edit (the manage pages, the API) and the change history records
    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = (
        "team",
        "name",
        "cohort",
        "weight",
        "allowed_service_classes",
        "is_open",
    )

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="queues")
    name = models.CharField(max_length=63, validators=[dns_label])
    cohort = models.ForeignKey(
        Cohort, on_delete=models.SET_NULL, null=True, blank=True, related_name="queues"
    )
    weight = models.FloatField(
        default=1.0,
        help_text="Fair-share weight (> 0): a queue with weight 2 gets twice the share.",
    )
    allowed_service_classes = models.ManyToManyField(
        "queues.ServiceClass",
        blank=True,
        related_name="queues",
        help_text="Classes jobs of this queue may use; none selected means every class.",
    )
    is_open = models.BooleanField(default=True, help_text="Closed queues accept no new jobs.")
    decayed_usage = models.FloatField(
        default=0.0, help_text="Fair-share history H(q) in GPU-equivalent-seconds, decayed."
    )
    decayed_usage_at = models.DateTimeField(null=True, blank=True)

    objects = QueueQuerySet.as_manager()

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"],
                name="queue_unique_team_name",
                violation_error_message="This team already has a queue with this name.",
            ),
            models.CheckConstraint(
                condition=Q(weight__gt=0),
                name="queue_weight_positive",
                violation_error_message="The weight must be greater than 0.",
            ),
            models.CheckConstraint(
                condition=Q(decayed_usage__gte=0),
                name="queue_decayed_usage_not_negative",
                violation_error_message="Decayed usage cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team.name}/{self.name}"

    def clean(self) -> None:
        if self.weight is not None and self.weight <= 0:
            raise ValidationError(
                {"weight": "The weight must be greater than 0 (1 is the default)."}
            )

    # ``QueueQuerySet.visible_to`` and ``submittable_by`` for one queue in hand, from the user's
    # rights read once per request (gpuplatform/roles.py): the same rules, without a query.
    def is_visible_to(self, user: AbstractBaseUser | AnonymousUser) -> bool:
        return roles.is_platform_admin_or_finance(user) or (
            self.team_id in roles.member_team_ids(user)
        )

    def takes_jobs_from(self, user: AbstractBaseUser | AnonymousUser) -> bool:
        return self.is_open and (
            roles.is_platform_admin(user) or self.team_id in roles.member_team_ids(user)
        )

    def accepts_service_class(self, service_class: models.Model) -> bool:
        allowed = self.allowed_service_classes.all()
        return not allowed.exists() or allowed.filter(pk=service_class.pk).exists()


class Quota(models.Model):
    """A queue's quota in one flavor, with Kueue's meanings (docs/SCHEDULING.md section 2)."""

    # what people edit (with its queue: the manage page, the API), the change history records
    # and lists show
    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = (
        "flavor",
        "nominal",
        "borrowing_limit",
        "lending_limit",
    )

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="quotas")
    flavor = models.ForeignKey("queues.Flavor", on_delete=models.PROTECT, related_name="quotas")
    nominal = models.PositiveIntegerField(help_text="GPUs (or slices) guaranteed to the queue.")
    borrowing_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="How far above nominal it may borrow; empty: no limit."
    )
    lending_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="How much of its unused nominal others may use; empty: all of it.",
    )

    class Meta:
        ordering = ["queue__team__name", "queue__name", "flavor__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "flavor"],
                name="quota_unique_queue_flavor",
                violation_error_message=(
                    "This queue already has a quota for this flavor; edit that one."
                ),
            ),
            models.CheckConstraint(
                condition=Q(nominal__gte=0),
                name="quota_nominal_not_negative",
                violation_error_message="The nominal quota cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(borrowing_limit__isnull=True) | Q(borrowing_limit__gte=0),
                name="quota_borrowing_limit_not_negative",
                violation_error_message="The borrowing limit cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(lending_limit__isnull=True)
                | (Q(lending_limit__gte=0) & Q(lending_limit__lte=models.F("nominal"))),
                name="quota_lending_limit_within_nominal",
                violation_error_message=(
                    "The lending limit must be between 0 and the nominal quota."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue} {self.flavor}: {self.nominal}"

    def clean(self) -> None:
        if (
            self.lending_limit is not None
            and self.nominal is not None
            and self.lending_limit > self.nominal
        ):
            raise ValidationError(
                {
                    "lending_limit": (
                        f"The lending limit ({self.lending_limit}) cannot exceed the nominal "
                        f"quota ({self.nominal}): a queue can only lend what it is guaranteed."
                    )
                }
            )


class CohortQuota(models.Model):
    """A cohort's own quota in one flavor (docs/SCHEDULING.md section 2a): its nominal adds
    capacity its subtree shares; its borrowing limit bounds what it takes from its parent; its
    lending limit what its subtree lends the parent (may exceed its own nominal)."""

    AUDITED_FIELDS: ClassVar[tuple[str, ...]] = Quota.AUDITED_FIELDS

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="quotas")
    flavor = models.ForeignKey(
        "queues.Flavor", on_delete=models.PROTECT, related_name="cohort_quotas"
    )
    nominal = models.PositiveIntegerField(
        default=0, help_text="GPUs (or slices) the cohort adds for its subtree to share."
    )
    borrowing_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="How much it may borrow from its parent; empty: no limit."
    )
    lending_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="How much its subtree lends its parent; empty: all unused."
    )

    class Meta:
        ordering = ["cohort__name", "flavor__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cohort", "flavor"],
                name="cohort_quota_unique_cohort_flavor",
                violation_error_message=(
                    "This cohort already has a quota for this flavor; edit that one."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cohort} {self.flavor}: {self.nominal}"
