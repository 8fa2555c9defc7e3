"""Job arrays through ``POST /api/v1/jobs/`` (queues/services/arrays.py).

Two shapes, both validated whole before anything is written:

- ``{"array": N, ...job fields}``: N jobs of the same submission (Slurm's ``--array=0-(N-1)``);
  the body is validated once, as a single job's is;
- ``[{...}, {...}]``: one job per body, each validated as a single job's; errors come back by
  the bad bodies' places: ``{"1": {"gpus_per_worker": [...]}}``.

The answer is 201 with ``{"array_id", "count", "ids"}``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from queues.api.job_serializers import JobSubmitSerializer
from queues.services.arrays import check_array_size

ARRAY = "array"


class ArrayCreatedSerializer(serializers.Serializer[Any]):
    array_id = serializers.IntegerField(help_text="The first job's id, shared by the array.")
    count = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.IntegerField(), help_text="In array order.")


def is_array(data: Any) -> bool:
    return isinstance(data, list) or (isinstance(data, dict) and ARRAY in data)


def _size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError({ARRAY: ["A whole number of jobs."]})
    try:
        check_array_size(value)
    except DjangoValidationError as error:
        raise ValidationError(error.message_dict) from None
    return value


def validated_submissions(data: Any, context: dict[str, Any]) -> list[dict[str, Any]]:
    """Every submission of the request, parsed and checked; a 400 before anything is written."""
    if isinstance(data, list):
        _size(len(data))
        many = JobSubmitSerializer(data=data, many=True, context=context)
        many.is_valid(raise_exception=True)
        return list(many.validated_data)
    body = dict(data)
    count = _size(body.pop(ARRAY))
    one = JobSubmitSerializer(data=body, context=context)
    one.is_valid(raise_exception=True)
    return [dict(one.validated_data) for _ in range(count)]
