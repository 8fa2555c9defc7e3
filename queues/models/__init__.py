"""The scheduling domain's models, one module per area (re-exported here)."""

from queues.models.idempotency import SubmissionKey
from queues.models.jobs import CycleRun, IllegalTransition, Job, JobEvent, JobFlavor
from queues.models.live import (
    JobRuntime,
    MetricCounter,
    SchedulerLease,
    SimulatedWorkload,
    WorkloadReference,
)
from queues.models.organisation import Cohort, CohortQuota, Membership, Queue, Quota, Team
from queues.models.resources import Cluster, Flavor, Node, ServiceClass
from queues.models.whatif import WhatIfRun

__all__ = [
    "Cluster",
    "Cohort",
    "CohortQuota",
    "CycleRun",
    "Flavor",
    "IllegalTransition",
    "Job",
    "JobEvent",
    "JobFlavor",
    "JobRuntime",
    "Membership",
    "MetricCounter",
    "Node",
    "Queue",
    "Quota",
    "SchedulerLease",
    "ServiceClass",
    "SimulatedWorkload",
    "SubmissionKey",
    "Team",
    "WhatIfRun",
    "WorkloadReference",
]
