"""LRU (seed 000 §5.1) as an external eviction policy: when a write needs
room, the least recently used evictable files go first, ties to the lower
file id, until `need` bytes are free; as the built-in `lru` evicts. A heap
of the files as they changed keeps each request's cost to what changed.

    eviction = 'external[cmd="python3 examples/python/lru.py"]'
"""

import heapq
import os
import sys

try:
    import gridbed
except ImportError:  # not installed (pip install gridbed): the repository's copy
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import gridbed


# Per site: (last_access, id, size) of every file as it changed, oldest
# first; an entry whose file changed again or left is skipped when popped.
heaps = {}


def evict(request):
    heap = heaps.setdefault(request["site"], [])
    for c in request["changed"]:
        heapq.heappush(heap, (c["last_access"], c["id"], c["size"]))
    pool = request["candidates"]
    chosen, freed = [], 0
    while freed < request["need"]:
        last_access, file, size = heapq.heappop(heap)
        c = pool.get(file)
        if c is None or c["last_access"] != last_access or file in chosen:
            continue  # stale: changed again since, or no longer evictable
        chosen.append(file)
        freed += size
    return chosen


if __name__ == "__main__":
    gridbed.serve(evict=evict)
