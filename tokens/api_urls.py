from rest_framework.routers import SimpleRouter

from tokens.api import ApiTokenViewSet

router = SimpleRouter()
router.register("tokens", ApiTokenViewSet, basename="api-token")

urlpatterns = router.urls
