"""Data-Present (seed 000 §5.1) as an external site selector: the job goes
to the eligible site holding the most of its input bytes; ties are broken
at random with the request's draw, as the built-in `data-present` draws.

    gridbed run testbeds/quickstart.toml \
      --strategy 'external[cmd="python3 examples/python/data_present.py"]'

equals `--strategy data-present` on a testbed with `replica_policy =
"caching"` (which the built-in implies).
"""

import os
import sys

try:
    import gridbed
except ImportError:  # not installed (pip install gridbed): the repository's copy
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import gridbed


def select(request):
    present = {}
    for f in request["job"]["inputs"]:
        for site in f["holders"]:
            present[site] = present.get(site, 0) + f["size"]
    eligible = request["eligible"]
    best = max(present.get(s, 0) for s in eligible)
    tied = [s for s in eligible if present.get(s, 0) == best]
    return tied[gridbed.pick(request["draw"], len(tied))]


if __name__ == "__main__":
    gridbed.serve(select=select)
