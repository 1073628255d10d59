"""First-available (seed 001 §3.2) as an external farm dispatch policy:
the head task goes to the first free executor, which then takes the next
tasks of the queue up to its free slots; as the built-in
`first-available` dispatches.

    gridbed farm testbeds/falkon-diffusion-small.toml \
      --policy 'external[cmd="python3 examples/python/first_available.py", window=16]'

(`window` is how many queued tasks each `pick_up` request lists; this
policy takes them from the front, so a short one is enough.)
"""

import os
import sys

try:
    import gridbed
except ImportError:  # not installed (pip install gridbed): the repository's copy
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import gridbed


def notify(request):
    return next((e for e, free in enumerate(request["free"]) if free), None)


def pick_up(request):
    return list(range(min(len(request["window"]), request["max"])))


if __name__ == "__main__":
    gridbed.serve(notify=notify, pick_up=pick_up)
