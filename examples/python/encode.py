"""Prints fenced_lock's encoding of resource ids, without etcd, for comparison with Java's LockKeys.

Standard input: {"strings": [text, ...], "bytes": [base64, ...]}: ids as text (taken as their
UTF-8) and as raw bytes. Standard output: one JSON object {"strings": [...], "bytes": [...]} with
each id's encoding, in the same order.
"""
import base64
import json
import sys

from fenced_lock import encode_resource

ids = json.load(sys.stdin)
json.dump({"strings": [encode_resource(text) for text in ids["strings"]],
           "bytes": [encode_resource(base64.b64decode(raw)) for raw in ids["bytes"]]}, sys.stdout)
sys.stdout.write("\n")
