"""Layered configuration: config.yaml files, environment variables and .env, validated with pydantic."""
