"""The top navigation leads a pool manager to the online pages (click logs, interleaving, the
offline–online tracker), which let only managers in; a rater gets no such links."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

ONLINE_PAGES = ("/online/logs/", "/online/interleaving/", "/online/tracker/")


def client_as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("page", ["/", "/manage/dashboard/"])
@pytest.mark.parametrize("persona", ["manager", "admin_user"])
def test_it_links_a_manager_to_every_online_page(request, persona, page):
    client = client_as(request.getfixturevalue(persona))
    html = client.get(page).content.decode()
    for url in ONLINE_PAGES:
        assert f'href="{url}"' in html
        assert client.get(url).status_code == 200


def test_it_gives_a_rater_no_online_link(rater):
    client = client_as(rater)
    html = client.get("/").content.decode()
    assert "/online/" not in html
    for url in ONLINE_PAGES:
        assert client.get(url).status_code == 403
