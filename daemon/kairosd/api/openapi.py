"""The API reference, ``GET /v1/openapi.json``: the route table plus the request and response models' JSON schemas.

Built on request from what the daemon really serves (every registered route and
method), from the pydantic models that parse the typed bodies and from the models
of the answers (:data:`kairosd.core.wire.routes.RESPONSES`, which tests hold the
handlers to), so the reference cannot drift from the code. Routes without a typed
body are listed with their methods and a plain JSON object body; a stream's answer
is ``application/jsonl``, one line of its model each; an answer not described yet
(:data:`kairosd.core.wire.routes.UNTYPED`) is listed without a schema.

Must not import any capability (scheduling, registry, ...) or the server: the router passes the table in.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from kairosd import __version__
from kairosd.core.protocol import ERROR_STATUS, PREFIX, ROUTES
from kairosd.core.wire.routes import RESPONSES, STREAMS, Answer, models_of

# A route as the router serves it: (its name in kairosd.core.protocol.ROUTES, {method: the request
# model of its body, or None}).
RouteSpec = tuple[str, dict[str, type[BaseModel] | None]]
_PARAM = re.compile(r"\{(\w+)\}")


def openapi_document(routes: list[RouteSpec]) -> dict[str, Any]:
    """OpenAPI 3.1 for the routes, in order, with the JSON schema of every typed body."""
    models = {model.__name__: model for _, verbs in routes for model in verbs.values() if model is not None}
    served = [(name, verb) for name, verbs in routes for verb in verbs]
    for key in served:
        answers = models_of(RESPONSES[key]) if key in RESPONSES else ()
        for answer in (*answers, STREAMS.get(key)):
            if answer is not None:
                models[answer.__name__] = answer
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
    for name, verbs in routes:
        path = PREFIX + ROUTES[name]
        entry = paths.setdefault(path, {})
        params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in _PARAM.findall(path)]  # fmt: skip
        for verb, model in verbs.items():
            operation: dict[str, Any] = {
                "responses": {
                    "2XX": _answer(RESPONSES.get((name, verb)), STREAMS.get((name, verb))),
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


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _answer(answer: Answer | None, line: type[BaseModel] | None) -> dict[str, Any]:
    """A success response: the answer's schema (any of its shapes), and a stream's (one JSON line of ``line``
    each) if it has one."""
    content: dict[str, Any] = {}
    if answer is not None:
        shapes = [_ref(model) for model in models_of(answer)]
        content.update(_json(shapes[0] if len(shapes) == 1 else {"anyOf": shapes}))
    if line is not None:
        content["application/jsonl"] = {"itemSchema": _ref(line)}
    return {"description": "success", "content": content} if content else {"description": "success"}
