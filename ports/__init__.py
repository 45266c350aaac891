"""Ports: the typing.Protocol interfaces of ironhive and the small data types they exchange."""
