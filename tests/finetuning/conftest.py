"""Shared by the fine-tuning tests: see tests/conftest.py."""

from tests.conftest import VOCABULARY, WORDS  # noqa: F401
