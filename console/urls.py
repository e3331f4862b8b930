from django.urls import path

from console import views

app_name = "console"
urlpatterns = [
    path("", views.home, name="home"),
]
