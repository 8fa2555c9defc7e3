"""The "API tokens" page under the user menu: list, create (secret shown once), revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tokens.forms import NewTokenForm
from tokens.models import ApiToken


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    new_secret = None
    form = NewTokenForm(user=request.user)
    if request.method == "POST":
        form = NewTokenForm(request.POST, user=request.user)
        if form.is_valid():
            _, new_secret = ApiToken.issue(
                user=request.user, name=form.cleaned_data["name"], expires_at=form.expires_at()
            )
            form = NewTokenForm(user=request.user)
    tokens = ApiToken.objects.filter(user=request.user)
    return render(
        request,
        "tokens/token_list.html",
        {"form": form, "tokens": tokens, "new_secret": new_secret},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)  # others' tokens: 404
    token.revoke()
    messages.success(request, f"Token {token.name!r} revoked.")
    return redirect("tokens")
