"""The API reference, ``GET /v1/openapi.json``: the route table plus the request models' JSON schemas.

Built on request from what the daemon really serves (every registered route and
method) and from the pydantic models that parse the typed bodies, so the
reference cannot drift from the code. Routes without a typed body are listed
with their methods and a plain JSON object body.

Must not import the service, the scheduler, the store or the server.
"""

from __future__ import annotations

import re
from typing import Any

from kairosd import __version__
from kairosd.api.requests import REQUEST_MODELS
from kairosd.core.protocol import ERROR_STATUS

# (method, path) -> the request model that parses its body.
TYPED_BODIES: dict[tuple[str, str], str] = {
    ("POST", "/v1/tasks"): "AddRequest",
    ("POST", "/v1/inbox/ack"): "AckRequest",
    ("POST", "/v1/import"): "ImportRequest",
    ("POST", "/v1/registry"): "StartRequest",
    ("POST", "/v1/registry/{id}/send"): "SendRequest",
}
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def openapi_path(pattern: str) -> str:
    """A route regex (``/v1/tasks/(?P<id>[^/]+)``) as an OpenAPI path (``/v1/tasks/{id}``)."""
    return _GROUP.sub(lambda m: "{" + m.group(1) + "}", pattern)


def openapi_document(patterns: list[str], methods: list[list[str]]) -> dict[str, Any]:
    """OpenAPI 3.1 for the routes given as (regex, methods) pairs, in order."""
    schemas = {name: model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
               for name, model in REQUEST_MODELS.items()}  # fmt: skip
    components: dict[str, Any] = {}
    for schema in schemas.values():
        components.update(schema.pop("$defs", {}))
    components.update(schemas)
    components["Error"] = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {"code": {"enum": sorted(ERROR_STATUS)}, "message": {"type": "string"}},
                "required": ["code", "message"],
            }
        },
        "required": ["error"],
    }
    paths: dict[str, Any] = {}
    for pattern, verbs in zip(patterns, methods, strict=True):
        path = openapi_path(pattern)
        entry = paths.setdefault(path, {})
        params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in _GROUP.findall(pattern)]  # fmt: skip
        for verb in verbs:
            operation: dict[str, Any] = {
                "responses": {
                    "200": {"description": "success"},
                    "default": {"description": "an error", "content": _json({"$ref": "#/components/schemas/Error"})},
                }
            }
            if params:
                operation["parameters"] = params
            model = TYPED_BODIES.get((verb, path))
            if model is not None:
                operation["requestBody"] = {
                    "required": True,
                    "content": _json({"$ref": f"#/components/schemas/{model}"}),
                }
            entry[verb.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "kairosd", "version": __version__, "description": "kairos' API over its Unix socket"},
        "paths": paths,
        "components": {"schemas": components},
    }


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}
