"""Puts ../python/tasker/client into the wheel as tasker/client (hatchling's custom build hook).

A hook rather than `force-include` in pyproject.toml: hatchling applies `force-include` to
editable wheels too, which would copy the sources into the venv beside the .pth that points at
them (workers/python/build.sh installs this package editable).
"""

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class ClientSources(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version != "standard":
            return
        sources = Path(self.root, "..", "python", "tasker", "client").resolve()
        if not (sources / "__init__.py").is_file() or not (sources / "py.typed").is_file():
            raise FileNotFoundError(f"{sources}: tasker.client's sources and py.typed are missing")
        build_data["force_include"][str(sources)] = "tasker/client"
