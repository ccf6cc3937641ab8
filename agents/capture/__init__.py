"""Live capture: the OTLP/HTTP receiver, and the calls its batches describe stored as sessions, messages and LlmCall
rows."""
