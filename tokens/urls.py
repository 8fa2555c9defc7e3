from django.urls import path

from tokens import views

urlpatterns = [
    path("account/tokens/", views.token_list, name="tokens"),
    path("account/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
]
