"""Exceptions raised on malformed input.

Solvers never raise on non-convergence (that is a :class:`~contactmp.result.Status`); they raise
these, with a message naming the bad field, when the input itself is wrong.
"""
from __future__ import annotations


class ContactMPError(Exception):
    """Base class of every exception contactmp raises on purpose."""


class InputError(ContactMPError, ValueError):
    """Malformed input: wrong shape, NaN/inf, negative friction, a mass matrix that is not SPD, ...

    ``field`` names the offending argument (for example ``"M"``, ``"q"``, ``"mu"``).
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class OptionError(ContactMPError, KeyError):
    """An unknown or ill-typed solver option (strict, with a 'did you mean' hint)."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class UnsupportedProgramError(ContactMPError):
    """No solver can take this program; the message says why."""
