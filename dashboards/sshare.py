"""The fair-share tree, as Slurm's ``sshare`` shows it: per cohort, then each of its queues.

Columns (sshare's names in brackets): the queue's nominal quota in GPU-equivalents [RawShares]
and its part of the cohort's [NormShares]; its decayed usage in GPU-equivalent-hours [RawUsage]
(the scheduler's H(q), halved every ``FAIRSHARE_HALF_LIFE``) and its part of the cohort's
[EffectvUsage]; the engine's share (``QuotaState.share``: the one meaning of "over its share",
queues.services.queue_status.SHARE_MEANING) where sshare has its FairShare factor; and what it
borrows above and lends of its nominal now, in GPU-equivalents. Queues without a cohort are
grouped under "(no cohort)", each compared with that group. Pure: from queue statuses and the
flavors' GPU-equivalents, no query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from dashboards.plain import ShareTreeRow
from queues.services.queue_status import QueueStatus

NO_COHORT = "(no cohort)"


def _equivalents(status: QueueStatus, gpu_equivalent: Mapping[str, float]) -> tuple[float, ...]:
    nominal = borrowed = lent = 0.0
    for f in status.flavors:
        geq = gpu_equivalent.get(f.flavor, 1.0)
        nominal += f.nominal * geq
        borrowed += f.borrowed * geq
        lent += f.lent * geq
    return nominal, borrowed, lent


def share_tree(
    statuses: Sequence[QueueStatus], gpu_equivalent: Mapping[str, float]
) -> list[ShareTreeRow]:
    """A cohort row (its totals) followed by its queues, cohorts by name, queues by name."""
    groups: dict[str, list[QueueStatus]] = defaultdict(list)
    for status in statuses:
        groups[status.cohort or NO_COHORT].append(status)
    rows: list[ShareTreeRow] = []
    for cohort in sorted(groups, key=lambda name: (name == NO_COHORT, name)):
        members = sorted(groups[cohort], key=lambda s: s.queue)
        numbers = {s.queue: _equivalents(s, gpu_equivalent) for s in members}
        total_nominal = sum(n[0] for n in numbers.values())
        total_usage = sum(s.decayed_usage for s in members)
        rows.append(
            ShareTreeRow(
                cohort=cohort, queue="", weight=None, nominal=total_nominal,
                norm_shares=1.0 if total_nominal > 0 else 0.0,
                raw_usage_hours=total_usage / 3600.0,
                effective_usage=1.0 if total_usage > 0 else 0.0,
                share=None, borrowed=sum(n[1] for n in numbers.values()),
                lent=sum(n[2] for n in numbers.values()),
                in_use=sum(s.usage_gpu_equivalent for s in members),
            )
        )  # fmt: skip
        for s in members:
            nominal, borrowed, lent = numbers[s.queue]
            rows.append(
                ShareTreeRow(
                    cohort=cohort, queue=s.queue, weight=s.weight, nominal=nominal,
                    norm_shares=nominal / total_nominal if total_nominal > 0 else 0.0,
                    raw_usage_hours=s.decayed_usage / 3600.0,
                    effective_usage=s.decayed_usage / total_usage if total_usage > 0 else 0.0,
                    share=s.share, borrowed=borrowed, lent=lent, in_use=s.usage_gpu_equivalent,
                )
            )  # fmt: skip
    return rows
