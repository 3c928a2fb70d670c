"""Helpers for code running in a Skills Protocol sandbox.

    import runtime
    text = runtime.blobs.read_text("blob:0123456789abcdef")
    runtime.WORKSPACE  # "/workspace", the only writable folder
"""
from . import blobs

WORKSPACE = "/workspace"

__all__ = ["blobs", "WORKSPACE"]
