"""Project API keys as a DRF authentication class, in a module of its own: DRF's settings import it while
``agents.api`` is still loading."""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from agents import access, models
from agents.projects import keys


class ApiKeyAuthentication(BaseAuthentication):
    """``Authorization: Bearer <key>``: the request acts as an editor of the key's one project."""

    def authenticate(self, request: Request) -> tuple[access.KeyUser, models.ApiKey] | None:
        scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        if not key.strip():
            raise AuthenticationFailed("missing API key after Bearer")
        try:
            api_key = keys.api_key_authenticate(key=key)
        except keys.ApiKeyError as exc:
            raise AuthenticationFailed(str(exc)) from None
        return access.KeyUser(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema documents the key."""

    target_class = ApiKeyAuthentication
    name = "projectApiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "mvz_<prefix>_<secret>",
                "description": "A project API key: an editor of its one project."}
