from rest_framework.routers import DefaultRouter

from queues.api import views
from queues.api.whatif import WhatIfViewSet

router = DefaultRouter()
router.register("teams", views.TeamViewSet, basename="api-team")
router.register("memberships", views.MembershipViewSet, basename="api-membership")
router.register("cohorts", views.CohortViewSet, basename="api-cohort")
router.register("queues", views.QueueViewSet, basename="api-queue")
router.register("flavors", views.FlavorViewSet, basename="api-flavor")
router.register("service-classes", views.ServiceClassViewSet, basename="api-service-class")
router.register("clusters", views.ClusterViewSet, basename="api-cluster")
router.register("nodes", views.NodeViewSet, basename="api-node")
router.register("jobs", views.JobViewSet, basename="api-job")
router.register("what-if", WhatIfViewSet, basename="api-what-if")

urlpatterns = router.urls
