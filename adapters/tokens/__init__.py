"""Token counters for remote models: tiktoken encodings shipped with ironhive (no download) and their selection."""
