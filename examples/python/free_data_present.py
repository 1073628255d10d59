"""The tutorial's selector (docs/write-a-policy.md): Data-Present among
the sites with a free slot. A job goes to the eligible site with a free
slot that holds the most of its input bytes; when no site has a free slot,
to the one holding the most; ties at random (the request's draw).

    gridbed sweep testbeds/quickstart.toml --sites 2,3,4,5 --maxpre 20 \
      --strategies 'round-robin,data-present,external[cmd="python3 examples/python/free_data_present.py"]'
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
    free = {s["id"] for s in request["sites"] if s["free"] > 0}
    eligible = [s for s in request["eligible"] if s in free] or request["eligible"]
    best = max(present.get(s, 0) for s in eligible)
    tied = [s for s in eligible if present.get(s, 0) == best]
    return tied[gridbed.pick(request["draw"], len(tied))]


if __name__ == "__main__":
    gridbed.serve(select=select)
