"""Live capture: the OTLP/HTTP receiver, the calls its batches describe stored as sessions, messages and LlmCall
rows, the memory writes, reads and compactions they describe stored in the ledger (``live_memory``), sessions
written through the API as they happen, and what each captured call was sent."""
