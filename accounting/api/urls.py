"""Accounting routes under /api/v1/ (included from gpuplatform/urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from accounting.api import budgets, finance, views

router = SimpleRouter()
router.register("usage", views.UsageViewSet, basename="usage")
router.register("prices", views.FlavorPriceViewSet, basename="price")
router.register("class-multipliers", views.ClassMultiplierViewSet, basename="class-multiplier")
router.register("statements", views.StatementViewSet, basename="statement")
router.register("budgets", budgets.BudgetViewSet, basename="budget")
router.register("adjustments", budgets.AdjustmentViewSet, basename="adjustment")

urlpatterns = [
    path("chargeback/", views.ChargebackView.as_view(), name="chargeback-api"),
    path("allocation/", finance.AllocationView.as_view(), name="allocation-api"),
    path("accounting/jobs/", finance.JobCostView.as_view(), name="job-costs-api"),
    *router.urls,
]
