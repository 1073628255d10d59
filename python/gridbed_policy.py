"""Write a gridbed policy in Python: protocol 1 of `external[cmd=...]`.

gridbed runs your program once per run and asks it for decisions over its
stdin/stdout, one JSON object a line (docs/write-a-policy.md). This module
does the talking; you write one function per decision you serve:

    import gridbed_policy as gp

    def select(request):          # -> a site id or name, or None to hold
        return request["eligible"][0]

    gp.serve(select=select)

Decisions and what the functions return:
  select(request)   a site (id or name) among request["eligible"], or None
                    to hold the job until the grid changes
  evict(request)    a list of file ids from request["candidates"] freeing
                    at least request["need"] bytes; "candidates" is every
                    evictable file of the site's pool, a dict from file id
                    to {"id", "size", "inserted", "last_access",
                    "accesses"}, kept here from each request's "changed"
                    and "gone"
  notify(request)   an executor id that is free, or None (the farm)
  pick_up(request)  a list of positions in request["window"], at most
                    request["max"] of them (the farm)

Every request has a "draw": a 32-bit number from a generator that gridbed
seeds for the policy, as it seeds its built-ins. Take your randomness from
it (`pick(draw, n)`) and the run repeats for a seed.

Pure standard library; put this file's folder on PYTHONPATH (or beside
your program) and import it.
"""

import json
import sys
import traceback

PROTOCOL = 1

_ANSWER_KEY = {"select": "site", "evict": "evict", "notify": "executor", "pick_up": "tasks"}


def pick(draw, n):
    """An index in range(n) from a request's draw, as gridbed's built-ins
    draw one (rand's `random_range(0..n)` for n < 2**32: the high 32 bits
    of draw * n)."""
    if not 0 < n < 2**32:
        raise ValueError(f"pick from range({n}): expected 0 < n < 2**32")
    return (draw * n) >> 32


def serve(select=None, evict=None, notify=None, pick_up=None, stdin=None, stdout=None):
    """Answers gridbed's requests until it closes the pipe."""
    handlers = {"select": select, "evict": evict, "notify": notify, "pick_up": pick_up}
    handlers = {k: f for k, f in handlers.items() if f is not None}
    if not handlers:
        raise ValueError("serve() needs at least one of select, evict, notify, pick_up")
    pools = {}  # per site: the evictable files, from "changed" and "gone"
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    write = stdout.write
    for line in stdin:
        request = json.loads(line)
        kind = request.get("type")
        if kind == "hello":
            if request.get("protocol") != PROTOCOL:
                sys.stderr.write(f"gridbed speaks protocol {request.get('protocol')}, this helper {PROTOCOL}\n")
            answer = {"type": "hello", "protocol": PROTOCOL, "serves": sorted(handlers)}
        elif kind in handlers:
            if kind == "evict":
                pool = pools.setdefault(request.get("site"), {})
                for f in request.get("gone", ()):
                    pool.pop(f, None)
                for c in request.get("changed", ()):
                    pool[c["id"]] = c
                request["candidates"] = pool
            try:
                choice = handlers[kind](request)
            except Exception:  # the run ends with what went wrong
                last = traceback.format_exc().strip().splitlines()
                answer = {"id": request.get("id"), "error": f"{kind}: {last[-1]}"}
                traceback.print_exc(file=sys.stderr)
            else:
                if kind == "select" and choice is None:
                    answer = {"id": request["id"], "hold": True}
                else:
                    answer = {"id": request["id"], _ANSWER_KEY[kind]: choice}
        else:
            answer = {"id": request.get("id"), "error": f"this program does not serve `{kind}`"}
        write(json.dumps(answer, separators=(",", ":")))
        write("\n")
        stdout.flush()
