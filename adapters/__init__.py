"""Adapters: ironhive's ports implemented with real technologies (SDKs, files, processes)."""
