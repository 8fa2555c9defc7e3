from django.urls import path

from queues import views

urlpatterns = [
    path("submit/", views.submit, name="submit"),
    path("jobs/", views.job_list, name="jobs"),
    path("queues/", views.queue_list, name="queues"),
]
