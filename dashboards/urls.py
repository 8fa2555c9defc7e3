from django.urls import path

from dashboards import views

urlpatterns = [
    path("", views.index, name="dashboards"),
    path("plotly.min.js", views.plotly_js, name="plotly-js"),
    path("<slug:slug>/", views.page, name="dashboard"),
    path("<slug:slug>/data/", views.data_json, name="dashboard-data"),
]
