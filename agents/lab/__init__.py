"""The trimming lab: one session under a strategy (preview, replay), strategies side by side (compare), strategies
across sessions (report), and presets."""
