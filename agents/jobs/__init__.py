"""Background jobs: long reports, exports and imports run by a worker, and a job's page."""
