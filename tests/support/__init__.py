"""Test support: loopback servers and helpers shared by the test suites."""
