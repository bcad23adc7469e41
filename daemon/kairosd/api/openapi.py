"""The API reference, ``GET /v1/openapi.json``: the route table plus the request models' JSON schemas.

Built on request from what the daemon really serves (every registered route and
method) and from the pydantic models that parse the typed bodies, so the
reference cannot drift from the code. Routes without a typed body are listed
with their methods and a plain JSON object body.

Must not import any capability (scheduling, registry, ...) or the server: the router passes the table in.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from kairosd import __version__
from kairosd.core.protocol import ERROR_STATUS

# A route as the router serves it: (path template such as ``/v1/tasks/{id}``, from
# kairosd.core.protocol.ROUTES, {method: the request model of its body, or None}).
RouteSpec = tuple[str, dict[str, type[BaseModel] | None]]
_PARAM = re.compile(r"\{(\w+)\}")


def openapi_document(routes: list[RouteSpec]) -> dict[str, Any]:
    """OpenAPI 3.1 for the routes, in order, with the JSON schema of every typed body."""
    models = {model.__name__: model for _, verbs in routes for model in verbs.values() if model is not None}
    schemas = {name: model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
               for name, model in sorted(models.items())}  # fmt: skip
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
    for path, verbs in routes:
        entry = paths.setdefault(path, {})
        params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in _PARAM.findall(path)]  # fmt: skip
        for verb, model in verbs.items():
            operation: dict[str, Any] = {
                "responses": {
                    "200": {"description": "success"},
                    "default": {"description": "an error", "content": _json({"$ref": "#/components/schemas/Error"})},
                }
            }
            if params:
                operation["parameters"] = params
            if model is not None:
                operation["requestBody"] = {
                    "required": True,
                    "content": _json({"$ref": f"#/components/schemas/{model.__name__}"}),
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
