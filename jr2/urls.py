"""URL routes: the Console at the root, Django's admin under /admin/."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("console.urls")),
]
