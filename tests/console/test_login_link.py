"""The one-time login link (jr2 up's first start, `jr2 login-link`): it logs its user in once, for 15 minutes;
it is kept only as a hash; a used, expired or unknown one is refused in words and changes nothing; and the first
start makes one superuser only for `jr2 up`, never for `jr2 web` or the production settings."""

from __future__ import annotations

import datetime as dt
import threading
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from engine.cli.commands.accounts import FIRST_USER, first_user_link
from engine.models import ApiToken, LoginLink

pytestmark = pytest.mark.django_db


def test_a_link_logs_its_user_in_once_and_is_kept_only_as_a_hash() -> None:
    ann = User.objects.create_user("ann")
    key = LoginLink.issue(ann)
    assert not LoginLink.objects.filter(key_hash=key).exists()
    assert LoginLink.objects.get().key_hash == ApiToken.digest(key)
    browser = Client()
    landed = browser.get(f"/login/{key}/")
    assert landed.status_code == 302 and landed.url == "/"
    assert browser.get("/").wsgi_request.user.get_username() == "ann"
    again = Client().get(f"/login/{key}/")
    assert again.status_code == 403
    assert "This login link does not work" in again.content.decode()
    assert LoginLink.objects.get().used_at is not None


@pytest.mark.parametrize("why", ["expired", "unknown", "inactive"])
def test_an_expired_unknown_or_inactive_users_link_is_refused(why: str) -> None:
    bob = User.objects.create_user("bob")
    key = LoginLink.issue(bob)
    if why == "expired":
        LoginLink.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    elif why == "unknown":
        key = ("y" if key[0] == "x" else "x") + key[1:]  # another first character: no such link
    else:
        User.objects.filter(pk=bob.pk).update(is_active=False)
    browser = Client()
    assert browser.get(f"/login/{key}/").status_code == 403
    assert not browser.get("/").wsgi_request.user.is_authenticated


@pytest.mark.django_db(transaction=True)
def test_two_uses_at_once_give_the_link_to_exactly_one() -> None:
    key = LoginLink.issue(User.objects.create_user("cy"))
    got: list[Any] = []

    def redeem() -> None:
        got.append(LoginLink.redeem(key))
        connection.close()

    threads = [threading.Thread(target=redeem) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(link is not None for link in got) == 1


def test_the_first_start_makes_one_superuser_only_for_jr2_up(settings: Any) -> None:
    assert "jr2 web: no Console user yet" in (first_user_link("web", "127.0.0.1", 8000) or "")
    settings.JR2_FIRST_USER = False
    assert "make one with `jr2 manage createsuperuser`" in (first_user_link("up", "127.0.0.1", 8000) or "")
    assert not User.objects.exists()
    settings.JR2_FIRST_USER = True
    line = first_user_link("up", "0.0.0.0", 8123) or ""
    assert line.startswith("jr2 up: log in at http://127.0.0.1:8123/login/")
    admin = User.objects.get()
    assert admin.username == FIRST_USER and admin.is_superuser and not admin.has_usable_password()
    assert first_user_link("up", "127.0.0.1", 8123) is None  # a user exists now: nothing more is made


def test_jr2_login_link_prints_a_fresh_link_for_a_named_user_or_the_only_superuser() -> None:
    User.objects.create_superuser("root", password=None)
    User.objects.create_user("dee")
    out, err = StringIO(), StringIO()
    call_command("jr2", "login-link", "--url", "http://jr2.example:9000", stdout=out, stderr=err)
    link = out.getvalue().strip()
    assert link.startswith("http://jr2.example:9000/login/") and "logs root in once" in err.getvalue()
    call_command("jr2", "login-link", "dee", stdout=out, stderr=err)
    assert LoginLink.objects.filter(user__username="dee").count() == 1
    with pytest.raises(Exception, match='no active user "nobody" \\(users: dee, root\\)'):
        call_command("jr2", "login-link", "nobody", stdout=StringIO(), stderr=StringIO())


def test_the_consoles_own_404_and_403_pages_name_what_and_show_no_settings() -> None:
    missing = Client().get("/no/such/page/")
    body = missing.content.decode()
    assert missing.status_code == 404 and "Nothing is at <code>/no/such/page/</code>" in body
    assert "URLconf" not in body and "SECRET_KEY" not in body and 'href="/runs/"' in body
    run = Client().get("/runs/nosuchrun/")
    assert run.status_code in (302, 404)
