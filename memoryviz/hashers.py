"""The password hasher: Argon2id, as Django's documentation recommends, with OWASP's parameters for it.

Django's own Argon2PasswordHasher (argon2-cffi's former defaults: 100 MiB, 2 passes, 8 lanes) costs as much CPU as
its default PBKDF2 of 1,000,000 iterations (about 0.18 s a check on this project's bench machine) and takes 100 MiB
per login under way. OWASP's Password Storage Cheat Sheet gives Argon2id with 19 MiB, 2 passes and 1 lane as its
recommended minimum, which it ranks alongside PBKDF2-HMAC-SHA256 at 600,000 iterations: about 0.02 s a check here
(bench/README.md, "Logins and page views during a big import"). A hash made with other parameters (or by PBKDF2,
kept after this one in PASSWORD_HASHERS) still verifies and is made again with these at the next login.
"""
from __future__ import annotations

from django.contrib.auth.hashers import Argon2PasswordHasher as DjangoArgon2PasswordHasher


class Argon2PasswordHasher(DjangoArgon2PasswordHasher):
    time_cost = 2
    memory_cost = 19 * 1024  # KiB
    parallelism = 1
