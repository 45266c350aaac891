"""Persistent sessions and the execution log, stored under ~/.ironhive."""
