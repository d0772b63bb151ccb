"""The one error type a user should ever see from a bad config: one line, naming what is valid."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import NoReturn


class ConfigError(ValueError):
    """A config value is invalid. The runner prints the message on one line and exits with 2."""


def check_choice(what: str, value: str, valid: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``valid``, else raise a ConfigError listing them."""
    valid = sorted(valid)
    if value not in valid:
        raise ConfigError(f"unknown {what} '{value}'; valid: {', '.join(valid)}")
    return value


def exit_with(error: Exception) -> NoReturn:
    """Print ``error: <message>`` on one line and exit with status 2 (a usage error)."""
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2)
