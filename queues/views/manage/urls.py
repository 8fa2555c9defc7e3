from django.urls import path

from queues.views.manage import cohorts, generic, index, queues, teams

urlpatterns = [
    path("", index.index, name="manage"),
    path("teams/", teams.team_list, name="manage-teams"),
    path("teams/new/", teams.team_edit, name="manage-team-new"),
    path("teams/<int:pk>/", teams.team_edit, name="manage-team-edit"),
    path("queues/", queues.queue_list, name="manage-queues"),
    path("queues/new/", queues.queue_edit, name="manage-queue-new"),
    path("queues/<int:pk>/", queues.queue_edit, name="manage-queue-edit"),
    path("cohorts/", cohorts.cohort_list, name="manage-cohorts"),
    path("cohorts/new/", cohorts.cohort_edit, name="manage-cohort-new"),
    path("cohorts/<int:pk>/", cohorts.cohort_edit, name="manage-cohort-edit"),
    path("<slug:slug>/", generic.object_list, name="manage-object-list"),
    path("<slug:slug>/new/", generic.object_edit, name="manage-object-new"),
    path("<slug:slug>/<int:pk>/", generic.object_edit, name="manage-object-edit"),
]
