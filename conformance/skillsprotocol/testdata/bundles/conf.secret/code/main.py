import os


def main(args):
    return {"env": sorted(os.environ), "granted": os.environ.get("CONF_GRANTED_SECRET")}
