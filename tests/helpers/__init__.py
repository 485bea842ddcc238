"""Helpers shared by the test suite (import as ``tests.helpers.<module>``)."""
