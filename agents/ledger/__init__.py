"""The memory layers beyond the message list, in the shell: storing what a file's memory layers hold (stores, records
with every version, recalls, snapshots) and reading them back for the pages, the API and exports. The data and the
rules shared with the readers are the core's (``agents.memory.ledger``); this package holds what needs the database.

- ``storing``: a ``MemoryDocument`` into rows, joined to what the project holds already (the import's last step).
"""
