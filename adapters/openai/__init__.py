"""OpenAI-compatible chat completions through the official openai SDK."""
