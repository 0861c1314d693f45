"""Checks the Python client against the API's OpenAPI document: every field each answer type's
``from_json`` reads exists in that answer's schema, and a field it reads as always there
(``data["x"]``) is one the schema requires. Run by tests/fast/openapi.rs with the document the
orchestrator serves, so a server change that breaks the client fails the test suite:

    python contract_check.py path/to/openapi.json

Prints nothing and exits 0 when the client agrees with the document; otherwise prints each
disagreement and exits 1.
"""

from __future__ import annotations

import ast
import json
import pathlib
import sys

CLIENT = pathlib.Path(__file__).resolve().parent.parent / "python" / "tasker" / "client"
# The modules that hold answer types.
VALUES = [CLIENT / "values.py", CLIENT / "audit.py"]

# Answer types named otherwise in the document.
SCHEMA_OF = {
    "TaskChild": "ChildLink",
    "BatchItemResult": "BatchItem",
    "BatchItemError": "ErrorDetail",
    "PurgeResult": "Purged",
    "Backfill": "Backfilled",
}
# Parts of a step the document gives as free-form JSON objects (described in prose): nothing
# to check them against.
FREE_FORM = {
    "StepChild",
    "StepWait",
    "StepThrottle",
    "StepLimits",
    "StepConcurrencyLimit",
    "StepRateLimit",
}


def reads(function: ast.FunctionDef) -> dict[str, bool]:
    """The fields ``from_json`` reads from its mapping: name -> read as always there."""
    arg = function.args.args[-1].arg
    fields: dict[str, bool] = {}
    for node in ast.walk(function):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id == arg and isinstance(node.slice, ast.Constant)):
            fields[node.slice.value] = True
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and isinstance(node.func.value, ast.Name)
              and node.func.value.id == arg and node.args
              and isinstance(node.args[0], ast.Constant)):
            fields.setdefault(node.args[0].value, False)
    return fields


def main() -> int:
    schemas = json.loads(pathlib.Path(sys.argv[1]).read_text())["components"]["schemas"]
    problems: list[str] = []
    checked = 0
    classes = [c for module in VALUES for c in ast.parse(module.read_text()).body]
    for cls in classes:
        if not isinstance(cls, ast.ClassDef) or cls.name in FREE_FORM:
            continue
        from_json = next((f for f in cls.body
                          if isinstance(f, ast.FunctionDef) and f.name == "from_json"), None)
        if from_json is None:
            continue
        name = SCHEMA_OF.get(cls.name, cls.name)
        schema = schemas.get(name)
        if schema is None:
            problems.append(f"{cls.name}: no schema {name!r} in the document")
            continue
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        for field, always in sorted(reads(from_json).items()):
            if field not in properties:
                problems.append(f"{cls.name}.from_json reads {field!r}, which {name} does not have")
            elif always and field not in required:
                problems.append(f"{cls.name}.from_json reads {field!r} as always there; "
                                f"{name} does not require it")
        checked += 1
    if checked < 15:
        problems.append(f"only {checked} answer types found in {[str(v) for v in VALUES]}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
