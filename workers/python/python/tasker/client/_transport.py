"""How a client reaches the orchestrator: its settings (arguments, else ``TASKER_URL``,
``TASKER_TOKEN``, ``TASKER_TLS_CA_FILE``), the ``httpx`` options they make, each request's
timeouts, and ``httpx``'s errors turned into the client's."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from ._calls import Send
from .errors import ClientError, ConnectionFailed

#: Where the orchestrator is when neither the argument nor ``TASKER_URL`` says.
DEFAULT_URL = "http://127.0.0.1:8080"
#: Seconds a request may take by default (connecting, sending, each read).
DEFAULT_TIMEOUT = 30.0
#: An unreachable address fails in seconds, not at the OS's connect timeout.
CONNECT_TIMEOUT = 5.0


def _setting(given: str | os.PathLike[str] | None, variable: str) -> str | None:
    if given is not None:
        return os.fspath(given)
    return os.environ.get(variable) or None


@dataclass(frozen=True)
class Settings:
    """A client's resolved settings."""

    base_url: str
    token: str | None
    tls_ca_file: str | None
    timeout: float | None

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        token: str | None,
        tls_ca_file: str | os.PathLike[str] | None,
        timeout: float | None,
    ) -> Settings:
        """The arguments given, the environment for those that are not."""
        url = _setting(base_url, "TASKER_URL") or DEFAULT_URL
        if not url.startswith(("http://", "https://")):
            raise ClientError(f"the API's URL must start with http:// or https://, not {url!r}")
        return cls(
            base_url=url.rstrip("/"),
            token=_setting(token, "TASKER_TOKEN"),
            tls_ca_file=_setting(tls_ca_file, "TASKER_TLS_CA_FILE"),
            timeout=timeout,
        )

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client`` and ``httpx.AsyncClient``."""
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return {
            "base_url": self.base_url,
            "headers": headers,
            "verify": self._tls_context() if self.tls_ca_file else True,
            "timeout": self._timeout(),
        }

    def _tls_context(self) -> ssl.SSLContext:
        """httpx's default trust (certifi's roots, or ``SSL_CERT_FILE``) and the CA file."""
        assert self.tls_ca_file is not None
        context = httpx.create_ssl_context()
        try:
            context.load_verify_locations(cafile=self.tls_ca_file)
        except OSError as e:  # ssl.SSLError is one: a file that holds no certificate
            raise ClientError(f"TLS: cannot use {self.tls_ca_file} as a CA file: {e}") from e
        return context

    def _timeout(self, wait: float | None = None) -> httpx.Timeout:
        connect = CONNECT_TIMEOUT if self.timeout is None else min(self.timeout, CONNECT_TIMEOUT)
        read = self.timeout
        if wait is not None and read is not None:
            # A long poll answers after up to `wait`: the usual timeout starts after it.
            read += wait
        return httpx.Timeout(self.timeout, connect=connect, read=read)

    def request_options(self, send: Send) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client.request`` for ``send``."""
        options = dict(send.request)
        if send.wait is not None:
            options["timeout"] = self._timeout(send.wait)
        return options

    @contextmanager
    def errors(self, send: Send) -> Iterator[None]:
        """Turns ``httpx``'s errors while sending ``send`` into the client's."""
        target = f"{str(send.request['method']).upper()} {self.base_url}{send.request['url']}"
        try:
            yield
        except httpx.TransportError as e:
            raise ConnectionFailed(
                f"cannot reach the Tasker API ({target}): {type(e).__name__}: {e}"
            ) from e
        except (httpx.HTTPError, httpx.InvalidURL) as e:
            raise ClientError(f"{target}: {type(e).__name__}: {e}") from e
