"""Serve gridbed's decisions from Python: protocol 1 of `external[cmd=...]`.

gridbed runs your program once per run and asks it for decisions over its
stdin/stdout, one JSON object a line (docs/write-a-policy.md). This module
does the talking; you write one function per decision you serve:

    import gridbed

    def select(request):          # -> a site id or name, or None to hold
        return request["eligible"][0]

    gridbed.serve(select=select)

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

Every request handed to a function has "hello": the handshake gridbed sent
(its "seed", and its "sites": each site's id, name, cpus, disk and
bandwidths, indexed by id), so that a policy can weigh a site's free slots
against its size without reading stdin itself.

A select request's "sites" is every site (id, free, claimed, active) as it
is now: this module asks gridbed for the sites that changed only and keeps
the table. It also takes a round's offers in one request (serve's `batch`)
and still calls select once per offer.

Every request has a "draw": a 32-bit number from a generator that gridbed
seeds for the policy, as it seeds its built-ins. Take your randomness from
it (`pick(draw, n)`) and the run repeats for a seed.

Standard library only, but for orjson (a dependency of the wheel), which
decodes a batch of offers twice as fast as `json` where it is installed.
"""

import json
import sys
import traceback

try:
    from orjson import loads as _loads
except ImportError:
    _loads = json.loads

PROTOCOL = 1

_ANSWER_KEY = {"select": "site", "evict": "evict", "notify": "executor", "pick_up": "tasks"}


def pick(draw, n):
    """An index in range(n) from a request's draw, as gridbed's built-ins
    draw one (rand's `random_range(0..n)` for n < 2**32: the high 32 bits
    of draw * n)."""
    if not 0 < n < 2**32:
        raise ValueError(f"pick from range({n}): expected 0 < n < 2**32")
    return (draw * n) >> 32


def _with_planned(job, planned):
    """`job` with the sites earlier placements registered its inputs at."""
    inputs = []
    for f in job["inputs"]:
        extra = [s for s in planned.get(f["id"], ()) if s not in f["holders"]]
        inputs.append(dict(f, holders=f["holders"] + extra) if extra else f)
    return dict(job, inputs=inputs)


def _select_batch(select, request, ids, hello):
    """Answers a batch of select offers in order, each as if asked alone:
    a placement takes one of its site's free slots before the next, and
    with `plans_inputs` its job's inputs count as held at its site.
    Returns the answers as JSON text."""
    sites = request["sites"]
    plans_inputs = request.get("plans_inputs", False)
    planned = {}  # file id -> sites earlier placements registered it at
    answers = []
    id_, time = request["id"], request["time"]
    n_sites = len(sites)
    for offer in request["offers"]:
        job = offer["job"]
        if planned:
            job = _with_planned(job, planned)
        choice = select(
            {
                "type": "select",
                "id": id_,
                "time": time,
                "job": job,
                "eligible": offer["eligible"],
                "sites": sites,
                "draw": offer["draw"],
                "hello": hello,
            }
        )
        if choice is None:
            answers.append('{"hold":true}')
            continue
        if type(choice) is int:
            answers.append('{"site":%d}' % choice)
            s = choice
        else:
            answers.append('{"site":%s}' % json.dumps(choice))
            s = ids.get(choice) if isinstance(choice, str) else choice
        if isinstance(s, int) and 0 <= s < n_sites:
            sites = list(sites)  # what earlier calls saw stays as it was
            site = sites[s] = dict(sites[s])
            site["claimed"] += 1
            if site["free"] > 0:
                site["free"] -= 1
            if plans_inputs:
                for f in job["inputs"]:
                    at = planned.setdefault(f["id"], [])
                    if s not in f["holders"] and s not in at:
                        at.append(s)
    return "[" + ",".join(answers) + "]"


def serve(select=None, evict=None, notify=None, pick_up=None, stdin=None, stdout=None, batch=1024):
    """Answers gridbed's requests until it closes the pipe.

    With `batch` > 1 gridbed may send several select offers in one request
    (a round of the manager); `select` is still called once per offer,
    with the sites' free slots updated by its earlier answers, so that it
    sees what it would see asked one at a time. A `select` whose answers
    depend on its own earlier answers (a counter, say) passes batch=1.
    """
    handlers = {"select": select, "evict": evict, "notify": notify, "pick_up": pick_up}
    handlers = {k: f for k, f in handlers.items() if f is not None}
    if not handlers:
        raise ValueError("serve() needs at least one of select, evict, notify, pick_up")
    pools = {}  # per site: the evictable files, from "changed" and "gone"
    ids = {}  # site name -> id, from the handshake
    hello = {}  # the handshake, handed to every function
    sites = []  # each site's free slots and load, kept from "sites" changes
    if stdin is None:
        # Bytes, read a megabyte at a time: a round of offers is a line of
        # hundreds of kilobytes, which text mode reads 8 kB at a time.
        stdin = open(sys.stdin.fileno(), "rb", buffering=1 << 20, closefd=False)
    stdout = stdout or sys.stdout
    write = stdout.write
    loads = _loads
    for line in stdin:
        request = loads(line)
        kind = request.get("type")
        if kind == "hello":
            if request.get("protocol") != PROTOCOL:
                sys.stderr.write(f"gridbed speaks protocol {request.get('protocol')}, this helper {PROTOCOL}\n")
            answer = {"type": "hello", "protocol": PROTOCOL, "serves": sorted(handlers)}
            if select is not None:
                answer["site_changes"] = True
                if batch > 1:
                    answer["batch"] = batch
            hello = request
            ids = {s["name"]: s["id"] for s in request.get("sites", ())}
        elif kind in handlers:
            if kind == "select":
                for site in request["sites"]:
                    i = site["id"]
                    if i >= len(sites):
                        sites.extend(None for _ in range(i + 1 - len(sites)))
                    sites[i] = site
                request["sites"] = list(sites)
            elif kind == "evict":
                pool = pools.setdefault(request.get("site"), {})
                for f in request.get("gone", ()):
                    pool.pop(f, None)
                for c in request.get("changed", ()):
                    pool[c["id"]] = c
                request["candidates"] = pool
            request["hello"] = hello
            try:
                if kind == "select" and "offers" in request:
                    answers = _select_batch(select, request, ids, hello)
                    write('{"id":%d,"answers":%s}\n' % (request["id"], answers))
                    stdout.flush()
                    continue
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
