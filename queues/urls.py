from django.urls import include, path

from queues.views import jobs, nodes, queues, submit

urlpatterns = [
    path("submit/", submit.submit, name="submit"),
    path("submit/estimate/", submit.estimate, name="submit-estimate"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<int:pk>/", jobs.job_detail, name="job-detail"),
    path("jobs/<int:pk>/cancel/", jobs.job_cancel, name="job-cancel"),
    path("queues/", queues.queue_list, name="queues"),
    path("queues/<int:pk>/", queues.queue_detail, name="queue-detail"),
    path("nodes/<int:pk>/", nodes.node_detail, name="node-detail"),
    path("nodes/<int:pk>/<slug:action>/", nodes.node_action, name="node-action"),
    path("manage/", include("queues.views.manage.urls")),
]
