"""Google AI (Gemini) through the official google-genai SDK."""
