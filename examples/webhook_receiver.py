#!/usr/bin/env python3
"""A webhook receiver for kairos' ``webhook:URL`` target: verifies each request, prints its prompt.

    umask 077; openssl rand -hex 32 > ~/.config/kairos/webhook.secret   # and set [webhook] secret_file
    KAIROS_WEBHOOK_SECRET_FILE=~/.config/kairos/webhook.secret python3 examples/webhook_receiver.py 8765
    kairos add --every 5m --target webhook:http://127.0.0.1:8765/kairos 'check the deploy'

Standard library only. ``verify`` is the part to copy into your own receiver: recompute
HMAC-SHA256(key, timestamp + "." + raw body), compare in constant time, refuse stale timestamps,
and drop a run id you have already handled (kairos retries, with the same Idempotency-Key).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_AGE_S = 300  # a replayed request older than this is refused


def verify(
    secret: bytes, timestamp: str, signature: str, body: bytes, now: float, max_age_s: float = MAX_AGE_S
) -> bool:
    """True if ``signature`` (the X-Kairos-Signature header) signs ``body`` sent at ``timestamp``."""
    if not timestamp.isdigit() or abs(now - int(timestamp)) > max_age_s:
        return False
    expected = "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


class Handler(BaseHTTPRequestHandler):
    secret = b""
    seen: set[str] = set()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ok = verify(
            self.secret,
            self.headers.get("X-Kairos-Timestamp", ""),
            self.headers.get("X-Kairos-Signature", ""),
            body,
            time.time(),
        )
        if not ok:
            self.send_response(401)
            self.end_headers()
            return
        run_id = self.headers.get("Idempotency-Key", "")
        if run_id not in self.seen:  # a retry of a run already handled is acknowledged, not handled again
            self.seen.add(run_id)
            doc = json.loads(body)
            print(f"[{doc['task_id']}] {doc['prompt']}", flush=True)
        self.send_response(204)
        self.end_headers()


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    # The file the README's Webhook section writes, unless KAIROS_WEBHOOK_SECRET_FILE names another.
    path = os.path.expanduser(os.environ.get("KAIROS_WEBHOOK_SECRET_FILE") or "~/.config/kairos/webhook.secret")
    try:
        with open(path, "rb") as file:
            Handler.secret = file.read().strip()
    except OSError as exc:
        sys.exit(f"webhook_receiver: cannot read the webhook key {path}: {exc.strerror} (see the README's Webhook target)")
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
