"""The part of pytest HTCondor's DAGMan drivers call: skip()."""


class Skipped(Exception):
    """A test that skipped itself."""


def skip(reason=""):
    raise Skipped(reason)
