"""Demo data (``manage.py seed_demo``): realistic conversations generated from seeded templates, pure Python. The
projects, agents and the list of every conversation in ``catalog``; each agent's conversations in a module of its
own (``travel``, ``support``, ``code_review``, ``research``), sessions broken in each way in ``broken``, and the
builder they share in ``chat``. The memory layers are files the libraries wrote (``memory_files``), which
``memory_layers`` lists for ``seed_demo`` to import."""
