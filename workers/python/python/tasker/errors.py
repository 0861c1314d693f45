"""Errors a handler raises to steer retries."""


class PermanentError(Exception):
    """Raise it (or a subclass) when retrying cannot help: the step fails at once and the
    task ends in ``error``. Every other exception is retried per the template's retry policy.

    The step's error ``kind`` is the exception's class name, so a subclass names its cause::

        class InvalidInput(tasker.PermanentError): ...
    """
