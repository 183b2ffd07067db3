"""A small Django project for the tests: views and URL patterns (``ROOT_URLCONF``)."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path, re_path


def user(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse({"id": pk})


def create_item(request: HttpRequest) -> JsonResponse:
    data = json.loads(request.body)
    return JsonResponse({"created": data["name"]}, status=201)


def article(request: HttpRequest, year: str) -> HttpResponse:
    return HttpResponse(f"year {year}", content_type="text/plain")


api_patterns = [path("items/", create_item)]

urlpatterns = [
    path("users/<int:pk>/", user),
    path("api/", include(api_patterns)),
    re_path(r"^articles/(?P<year>[0-9]{4})/$", article),
]
