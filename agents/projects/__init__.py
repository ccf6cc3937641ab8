"""Projects: their members and roles, their labels, their API keys (the project settings page)."""
