import runtime


def main(args):
    text = args.get("text")
    if text is None and args.get("blob"):
        text = runtime.blobs.read_text(args["blob"])
    if text is None:
        raise ValueError('pass {"text": "..."} or {"blob": "blob:<id>"}')
    return {"lines": len(text.splitlines()), "words": len(text.split()), "chars": len(text)}
