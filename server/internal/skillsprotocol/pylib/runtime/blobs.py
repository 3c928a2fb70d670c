"""Read-only access to the blobs passed to this run (input_blobs).

Each blob is the file /blobs/<hex> for the handle blob:<hex>.
"""
import json as _json
import os as _os

ROOT = "/blobs"


def path(blob_id):
    """The file of a blob handle ("blob:<hex>" or "<hex>")."""
    h = blob_id[len("blob:"):] if blob_id.startswith("blob:") else blob_id
    if not h or "/" in h or h.startswith("."):
        raise ValueError("not a blob handle: %r (expected blob:<hex>)" % (blob_id,))
    p = _os.path.join(ROOT, h)
    if not _os.path.isfile(p):
        raise KeyError("blob %s is not mounted in this run (pass it in input_blobs)" % (blob_id,))
    return p


def read_bytes(blob_id):
    with open(path(blob_id), "rb") as f:
        return f.read()


def read_text(blob_id, encoding="utf-8"):
    with open(path(blob_id), encoding=encoding) as f:
        return f.read()


def read_json(blob_id):
    return _json.loads(read_text(blob_id))


def list():
    """Handles of every blob mounted in this run, sorted."""
    if not _os.path.isdir(ROOT):
        return []
    return sorted("blob:" + n for n in _os.listdir(ROOT))
