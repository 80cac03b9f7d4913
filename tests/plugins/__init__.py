"""Fixtures shared by several test modules: pytest plugins listed in tests/conftest.py."""
