"""The ironhive command line."""
