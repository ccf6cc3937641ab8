"""The JSON API: the pages' twins, for scripts and other tools, one module per capability (sessions, agents,
review, lab, transfer) over what every endpoint shares (endpoints) and project keys as DRF authentication (auth)."""
