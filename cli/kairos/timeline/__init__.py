"""``kairos timeline``'s picture: the pure layout (:mod:`.layout`) and its SVG/HTML drawing (:mod:`.draw`).

Both take the document ``GET /v1/timeline`` answers and do no I/O, so ``kairos ui`` can draw the same
chart. Must not import the client, argparse or any kairosd module but the pure core.
"""
