from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from nexus.admin_usage import usage_admin_view
from nexus.api.keys.urls import api_urlpatterns as key_api_urls
from nexus.api.keys.urls import page_urlpatterns as key_page_urls
from nexus.failures import unknown_api_address
from nexus.health import healthz
from nexus.login_limit import limited_login
from nexus.web import with_csp
from summaries.api.usage import UsageView

# Failures outside views: JSON under /api/ and /v1/, 503 for the database.
handler404 = "nexus.failures.page_not_found"
handler500 = "nexus.failures.server_error"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Before admin/ and api/ so their catch-alls never see these.
    path("admin/usage/", usage_admin_view, name="admin-usage"),
    path("api/usage/", UsageView.as_view(), name="api-usage"),
    path("admin/login/", limited_login(admin.site.login), name="admin-login-limited"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view loads its start-up script from ?script, so the page has
    # no inline script and keeps the site's Content-Security-Policy.
    path(
        "api/docs/",
        with_csp(SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api_docs.html")),
        name="api-docs",
    ),
    path("api/", include(key_api_urls)),
    path("api/", include("sessions_app.api.urls")),
    path("api/", include("summaries.api.urls")),
    path("api/", include("summaries.api.context_urls")),
    path("v1/", include("summaries.openai_api.urls")),
    # After every API route: any other address under them is a JSON 404, in DEBUG too.
    re_path(r"^(?:api|v1)/", unknown_api_address, name="unknown-api-address"),
    path("", include(key_page_urls)),
    path("", include("sessions_app.urls")),
    path("", include("summaries.page_urls")),
]
