"""A NUL character anywhere in a request's text is a 400, never a database error (PostgreSQL refuses it)."""

from __future__ import annotations

import pytest

from tests.conftest import client_for


@pytest.mark.django_db
def test_it_refuses_nul_in_json_form_and_query_with_400(manager):
    api = client_for(manager)
    assert api.post("/api/judging/", {"pool": "a\x00b"}, format="json").status_code == 400
    assert api.get("/api/releases/?pool=a%00b").status_code == 400
    response = api.post("/api/collections/", "name=a%00b", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert api.get("/api/releases/?pool=ab").status_code == 200


@pytest.mark.django_db
def test_it_lets_uploads_carry_any_bytes(manager, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    api = client_for(manager)
    api.post("/api/collections/", {"name": "c1"}, format="json")
    upload = SimpleUploadedFile("run.txt.gz", b"\x1f\x8b\x08\x00\x00\x00")
    response = api.post("/api/collections/c1/imports/", {"kind": "run", "file": upload}, format="multipart")
    # Refused for what the file is (a cut gzip stream), not for its bytes.
    assert response.status_code == 400
    assert "gzip" in response.json()["file"][0] and "NUL" not in response.content.decode()


@pytest.mark.django_db
def test_it_sends_the_same_csp_with_every_response(admin_user, rater):
    from django.test import Client

    from labeling.middleware import CONTENT_SECURITY_POLICY
    from tests.factories import make_pool

    make_pool(name="p", raters=[rater])
    client = Client()
    assert client.get("/accounts/login/")["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    client.force_login(admin_user)
    for path in ("/pools/", "/pools/p/", "/manage/", "/campaigns/p/releases/", "/evaluation/p/", "/admin/",
                 "/api/pools/", "/api/docs/", "/api/schema/", "/no-such-page/"):  # fmt: skip
        response = client.get(path)
        assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, (path, response.status_code)


@pytest.mark.django_db
def test_a_page_form_with_nul_is_refused_with_a_page_and_changes_nothing(manager):
    """A form posted from a page (the pool's edit form) is refused with a page saying why, in the site's
    layout, not the API's JSON; the pool's text is unchanged."""
    from urllib.parse import urlencode

    from django.test import Client

    from tests.factories import make_pool

    pool = make_pool(name="texts", managers=[manager])
    client = Client()
    client.force_login(manager)
    form = urlencode({"description": "a\x00b", "instructions": ""})  # as a browser sends a form
    urlencoded = "application/x-www-form-urlencoded"
    response = client.post(f"/pools/{pool.name}/edit/", form, content_type=urlencoded)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "NUL characters are not allowed" in page and "Go back" in page and 'href="/"' in page
    pool.refresh_from_db()
    assert "\x00" not in pool.description
