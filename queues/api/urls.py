from rest_framework.routers import DefaultRouter

from queues.api import views

router = DefaultRouter()
router.register("teams", views.TeamViewSet, basename="team")
router.register("memberships", views.MembershipViewSet, basename="membership")
router.register("cohorts", views.CohortViewSet, basename="cohort")
router.register("queues", views.QueueViewSet, basename="queue")
router.register("flavors", views.FlavorViewSet, basename="flavor")
router.register("service-classes", views.ServiceClassViewSet, basename="service-class")
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("nodes", views.NodeViewSet, basename="node")
router.register("jobs", views.JobViewSet, basename="job")

urlpatterns = router.urls
