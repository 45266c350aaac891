"""The turn backends of ``ironhive serve``: in process, or on Redis across machines."""
