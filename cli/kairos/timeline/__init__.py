"""``kairos timeline``'s picture: the pure layout (:mod:`.layout`) and its SVG/HTML drawing (:mod:`.draw`).

Both take the document ``GET /v1/timeline`` answers and do no I/O, so ``kairos ui`` draws the same chart
with them; :mod:`.document` asks for that document and cleans it, for both. Must not import the client,
argparse or any kairosd module but the pure core (:mod:`.document` may import :mod:`kairos.output`).
"""
