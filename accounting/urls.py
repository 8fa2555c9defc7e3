from django.urls import path

from accounting import views

urlpatterns = [path("", views.chargeback_page, name="chargeback")]
