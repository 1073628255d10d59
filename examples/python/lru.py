"""LRU (seed 000 §5.1) as an external eviction policy: when a write needs
room, the least recently used evictable files go first, ties to the lower
file id, until `need` bytes are free; as the built-in `lru` evicts.

    eviction = 'external[cmd="python3 examples/python/lru.py"]'
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gridbed_policy as gp  # noqa: E402


def evict(request):
    chosen, freed = [], 0
    for c in sorted(request["candidates"], key=lambda c: (c["last_access"], c["id"])):
        if freed >= request["need"]:
            break
        chosen.append(c["id"])
        freed += c["size"]
    return chosen


if __name__ == "__main__":
    gp.serve(evict=evict)
