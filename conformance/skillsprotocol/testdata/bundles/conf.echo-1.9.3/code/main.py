import helper


def run(args):
    return {"version": helper.VERSION, "args": args}
