"""Demo data: realistic conversations generated from seeded templates (``manage.py seed_demo``)."""
