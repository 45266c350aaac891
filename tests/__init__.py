"""ironhive test suite."""
