"""Request hygiene that no single view should have to remember."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

#: Sent with every response (pages, fragments, the admin, the API and its docs): no inline script or style,
#: nothing from elsewhere. Pages render untrusted text (document bodies, titles, notes, run names); this is
#: what keeps a script that slipped through from running.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class ContentSecurityPolicyMiddleware:
    """Adds `CONTENT_SECURITY_POLICY` to every response (a view that sets its own keeps it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


NUL_MARKERS = {
    "application/json": (b"\\u0000",),
    "application/x-www-form-urlencoded": (b"%00", b"\x00"),
}


NUL_REFUSED = "NUL characters are not allowed in a request."


class RejectNulMiddleware:
    """A NUL character in a query string or a form or JSON body is refused with a 400 before any view
    runs: PostgreSQL cannot store it in a text column and would answer the query with an error (a 500).
    Uploaded files (multipart) may hold any bytes and are left alone. The API answers `{"detail": …}`;
    a page answers a page that says so, with the way back (a form posted from a page is not an API call)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._has_nul(request):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": NUL_REFUSED}, status=400)
            advice = "A field of the form held one (often pasted from another program): nothing was saved."
            return render(request, "refused.html", {"message": NUL_REFUSED, "advice": advice}, status=400)
        return self.get_response(request)

    @staticmethod
    def _has_nul(request: HttpRequest) -> bool:
        if "\x00" in request.path or "%00" in request.META.get("QUERY_STRING", "").lower():
            return True
        content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        markers = NUL_MARKERS.get(content_type)
        if not markers or request.method in ("GET", "HEAD", "OPTIONS"):
            return False
        body = request.body
        return any(marker in body for marker in markers)
