"""Live capture: the OTLP/HTTP receiver, the calls its batches describe stored as sessions, messages and LlmCall
rows, sessions written through the API as they happen, and what each captured call was sent."""
