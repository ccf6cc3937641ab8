from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from agents.auth import LoginView
from agents.urls import api_urlpatterns

urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # The JSON API, in a namespace of its own ("api:...").
    path("api/", include((api_urlpatterns, "api"))),
    path("", include("agents.urls")),
]
