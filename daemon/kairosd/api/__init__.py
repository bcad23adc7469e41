"""The HTTP-over-Unix-socket framework that every capability's routes plug into.

    unixsocket  bind a 0600 socket, take over a stale one, read the peer's uid
    http_types  Request, Response, StreamResponse and the hang-up rule
    server      HTTP/1.1 over the socket (h11), errors mapped to statuses
    router      the one route table: capabilities register routes; refuses duplicates
    requests    the base of every typed request model, the one body parser and error line
    openapi     ``GET /v1/openapi.json`` from the route table and the models

Imports: :mod:`kairosd.core` and :mod:`kairosd.system` only; never a capability
(scheduling, jobs, sessions, ...): they import this package to serve their routes.
"""
