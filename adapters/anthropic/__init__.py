"""Anthropic Messages API through the official anthropic SDK."""
