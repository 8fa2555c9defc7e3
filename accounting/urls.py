"""Routes of the accounting pages.

`urlpatterns` is mounted at /chargeback/. `price_urlpatterns` is the prices page; it belongs
at /manage/prices/, so the root URLconf includes it BEFORE the manage pages' catch-all
``manage/<slug>/``:
``path("manage/prices/", include(accounting.urls.price_urlpatterns))``.
"""

from django.urls import path

from accounting import report, views

urlpatterns = [
    path("", views.chargeback_page, name="chargeback"),
    path("report/", report.report_page, name="chargeback-report"),
]

price_urlpatterns = [path("", views.prices_page, name="manage-prices")]
