"""The scheduling domain's REST API under /api/v1/ (serializers, filtersets, viewsets, urls)."""
