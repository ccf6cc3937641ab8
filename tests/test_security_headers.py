"""Every response carries a Content-Security-Policy that allows no inline script; HTTPS settings come from the
environment."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

ROOT = Path(__file__).resolve().parent.parent
CHAT = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]


def _directives(header: str) -> dict[str, str]:
    return {name: value for name, _, value in (d.strip().partition(" ") for d in header.split(";"))}


def test_it_sends_a_strict_policy_with_every_page(alice_client, make_session):
    session = make_session(CHAT)
    pages = ["/", f"/sessions/{session.pk}/", f"/sessions/{session.pk}/lab/", "/import/", "/exports/",
             "/lab/report/", "/sessions/999999/"]
    for url in pages:
        response = alice_client.get(url)
        policy = _directives(response["Content-Security-Policy"])
        assert policy["script-src"] == "'self'", url
        assert policy["style-src"] == "'self'", url
        assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'", url
        assert "unsafe" not in response["Content-Security-Policy"], url
        assert not INLINE.findall(response.content.decode()), url  # forms' widgets included
    assert "Content-Security-Policy" in Client().get("/login/")


def _every_page_url(ids: dict[str, object]) -> list[str]:
    """Every route of memoryviz's own pages (agents.urls), its converters filled from ``ids``."""
    from django.urls import URLPattern

    from agents import urls

    found = []
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        for name in pattern.pattern.converters:
            route = re.sub(rf"<(\w+:)?{name}>", str(ids[name]), route)
        found.append("/" + route)
    return found


def test_it_sends_the_strict_policy_on_every_route_of_the_pages_whatever_it_answers(alice_client, make_session):
    # Walked from the URL list, so that a page added tomorrow is checked too; POST-only routes answer 405, missing
    # rows 404: every answer carries the policy.
    from agents.models import Label, LlmCall, Membership, MemoryRecord, MemoryStore, Recall

    session = make_session(CHAT)
    project = session.agent.project
    store = MemoryStore.objects.create(project=project, agent=session.agent, name="notes", kind="records",
                                       record_count=1, version_count=1)
    record = MemoryRecord.objects.create(store=store, external_id="r1", text="<b>likes trains</b>", version_count=1)
    ids = {"session_id": session.pk, "agent_id": session.agent_id, "slug": project.slug, "prefix": "abc",
           "job_id": 999999, "membership_id": Membership.objects.filter(project=project).first().pk,
           "label_id": Label.objects.create(project=project, name="x").pk, "annotation_id": 999999,
           "call_id": getattr(LlmCall.objects.first(), "pk", 999999), "record_id": record.pk,
           "recall_id": Recall.objects.create(session=session, seq=1, store=store, query="<b>trains?</b>").pk}
    urls = _every_page_url(ids)
    assert len(urls) >= 35
    for url in urls:
        response = alice_client.get(url)
        assert response.status_code < 500, url
        policy = _directives(response["Content-Security-Policy"])
        assert (policy["script-src"], policy["style-src"], policy["object-src"]) == ("'self'", "'self'", "'none'"), url
        assert policy["frame-ancestors"] == "'none'" and "unsafe" not in response["Content-Security-Policy"], url
        if response.get("Content-Type", "").startswith("text/html"):
            assert not INLINE.findall(response.content.decode()), url


def test_it_lets_the_admin_and_the_browsable_api_use_inline_styles_but_never_inline_scripts(admin_client):
    for url in ("/admin/", "/api/"):
        response = admin_client.get(url, HTTP_ACCEPT="text/html")
        assert response.status_code == 200
        policy = _directives(response["Content-Security-Policy"])
        assert policy["style-src"] == "'self' 'unsafe-inline'", url
        assert policy["script-src"] == "'self'", url


def test_it_sends_the_policy_on_answers_made_before_any_view(client, alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    refused = client.post("/import/", {})  # no CSRF token: the CSRF middleware answers 403
    assert refused.status_code == 403
    assert "script-src 'self'" in refused["Content-Security-Policy"]


@override_settings(CSP_REPORT_ONLY=True, CSP_REPORT_URI="/csp-reports/")
def test_it_only_reports_when_told_to(alice_client):
    response = alice_client.get("/")
    assert "Content-Security-Policy" not in response
    assert _directives(response["Content-Security-Policy-Report-Only"])["report-uri"] == "/csp-reports/"


INLINE = re.compile(
    r"<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=|javascript:|hx-on|hx-vals=['\"]js:", re.IGNORECASE
)


def test_it_keeps_every_template_free_of_inline_script_and_style():
    found = []
    for path in sorted((ROOT / "templates").rglob("*.html")) + sorted((ROOT / "agents").rglob("templates/**/*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if INLINE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_it_tells_htmx_to_need_neither_inline_styles_nor_eval(alice_client):
    html = alice_client.get("/").content.decode()
    config = re.search(r"<meta name=\"htmx-config\" content='([^']+)'>", html)
    assert config, "base.html configures htmx"
    assert json.loads(config.group(1)) == {"includeIndicatorStyles": False, "allowEval": False,
                                           "allowScriptTags": False, "historyRestoreAsHxRequest": False}


# --- HTTPS settings from the environment -------------------------------------------------------------------------

PROBE = """
import django, json
django.setup()
from django.conf import settings
from django.test import Client
client = Client()
plain = client.get("/login/")
proxied = client.get("/login/", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps({
    "hsts": settings.SECURE_HSTS_SECONDS, "redirect": settings.SECURE_SSL_REDIRECT,
    "proxy": settings.SECURE_PROXY_SSL_HEADER,
    "plain": [plain.status_code, plain.get("Location", "")],
    "proxied": [proxied.status_code, proxied.get("Strict-Transport-Security", "")],
}))
"""


def _settings_probe(**env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "CSP_"))}
    environment.update({"DJANGO_SETTINGS_MODULE": "memoryviz.settings", "DEBUG": "true",
                        "ALLOWED_HOSTS": "testserver", **env})
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=120)


def test_it_reads_hsts_and_the_ssl_redirect_from_the_environment():
    done = _settings_probe(SECURE_HSTS_SECONDS="3600", SECURE_SSL_REDIRECT="true",
                           SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto=https", SECURE_HSTS_INCLUDE_SUBDOMAINS="true")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert seen["plain"] == [301, "https://testserver/login/"]
    assert seen["proxied"] == [200, "max-age=3600; includeSubDomains"]


def test_it_leaves_https_to_the_operator_by_default():
    done = _settings_probe()
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["hsts"], seen["redirect"], seen["proxy"]) == (0, False, None)
    assert seen["plain"][0] == 200 and seen["proxied"] == [200, ""]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [("SECURE_HSTS_SECONDS", "a year", "SECURE_HSTS_SECONDS='a year': expected a whole number"),
     ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto", "expected HEADER=VALUE")],
)
def test_it_names_a_wrong_https_setting(name, value, says):
    done = _settings_probe(**{name: value})
    assert done.returncode != 0
    assert says in done.stderr
