import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryviz.settings")
application = get_wsgi_application()

# What the process loads once (Django, the URLconf and every view module it imports, the templates' libraries) lives
# as long as the process: moved out of the cyclic collector's sight, so that a full collection scans only what
# requests made. Each full collection otherwise rescanned some 110,000 startup objects, adding 50 to 70 ms to one
# request in several: the session page's and an export's p95 CPU fell by a third (bench/README.md, "Logins and
# page views during a big import").
get_resolver().url_patterns  # noqa: B018  (loaded now rather than by the first request)
gc.freeze()
