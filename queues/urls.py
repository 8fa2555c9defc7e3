from django.urls import include, path

from queues.views import jobs, queues, submit

urlpatterns = [
    path("submit/", submit.submit, name="submit"),
    path("submit/estimate/", submit.estimate, name="submit-estimate"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<int:pk>/", jobs.job_detail, name="job-detail"),
    path("jobs/<int:pk>/cancel/", jobs.job_cancel, name="job-cancel"),
    path("queues/", queues.queue_list, name="queues"),
    path("queues/<int:pk>/", queues.queue_detail, name="queue-detail"),
    path("manage/", include("queues.views.manage.urls")),
]
