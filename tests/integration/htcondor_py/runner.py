"""Runs one of HTCondor's pytest DAGMan drivers with the stand-ins
beside this file: its fixtures (`@action`, `@standup`, one value of each
parametrized one at a time, generators to their first value) and the
test methods of its `Test*` classes, in the working folder given, and
prints one JSON line per test: its id, `passed`, `failed` (with why) or
`skipped`.

    python3 runner.py DRIVER.py WORKDIR
"""

import importlib.util
import inspect
import itertools
import json
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pytest  # noqa: E402  (the stand-in)

SLEEP = """#!/usr/bin/env python3
# ornithology's path_to_sleep, as far as its exit goes: a number of
# seconds is a success, anything else a failure (the job's time is
# gridbed's model, not the program's).
import sys
try:
    float(sys.argv[1])
except Exception:
    sys.exit(1)
"""


class Request:
    def __init__(self, param):
        self.param = param


def main():
    driver, workdir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    os.chdir(workdir)
    sleep = workdir / "ornithology_sleep.py"
    sleep.write_text(SLEEP)
    sleep.chmod(0o755)
    spec = importlib.util.spec_from_file_location(driver.stem, driver)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    from ornithology import Condor

    builtins = {
        "test_dir": workdir,
        "path_to_sleep": str(sleep),
        "default_condor": Condor(),
    }
    fixtures = {
        name: f
        for name, f in vars(module).items()
        if callable(f) and hasattr(f, "_fixture")
    }

    def needs(name, seen=None):
        """The parametrized fixtures `name` depends on."""
        seen = seen if seen is not None else set()
        if name in seen or name not in fixtures:
            return set()
        seen.add(name)
        f = fixtures[name]
        own = {name} if f._fixture["params"] else set()
        for arg in inspect.signature(f).parameters:
            own |= needs(arg, seen)
        return own

    cache = {}

    def value(name, params):
        if name in builtins:
            return builtins[name]
        if name == "request":
            raise KeyError("request outside a parametrized fixture")
        f = fixtures[name]
        key = (name, tuple(sorted((p, params[p]) for p in needs(name))))
        if key in cache:
            result, error = cache[key]
            if error is not None:
                raise error
            return result
        # A fixture runs once per value of the parameters it depends on; a
        # failure is its dependents' failure too, not a second try.
        try:
            kwargs = {}
            for arg in inspect.signature(f).parameters:
                if arg == "request":
                    kwargs[arg] = Request(params.get(name))
                else:
                    kwargs[arg] = value(arg, params)
            result = f(**kwargs)
            if inspect.isgenerator(result):
                result = next(result)
        except BaseException as e:
            cache[key] = (None, e)
            raise
        cache[key] = (result, None)
        return result

    for cls_name, cls in vars(module).items():
        if not (inspect.isclass(cls) and cls_name.startswith("Test")):
            continue
        for meth_name, meth in vars(cls).items():
            if not (meth_name.startswith("test") and callable(meth)):
                continue
            args = [a for a in inspect.signature(meth).parameters if a != "self"]
            param_names = sorted(set().union(*(needs(a) for a in args)) if args else set())
            choices = []
            for p in param_names:
                ps = fixtures[p]._fixture["params"]
                choices.append(list(ps.values()) if isinstance(ps, dict) else list(ps))
            for combo in itertools.product(*choices):
                params = dict(zip(param_names, combo))
                test_id = f"{cls_name}::{meth_name}"
                if combo:
                    test_id += "[" + "-".join(str(c) for c in combo) + "]"
                os.chdir(workdir)
                try:
                    meth(cls(), **{a: value(a, params) for a in args})
                    outcome, why = "passed", ""
                except pytest.Skipped as e:
                    outcome, why = "skipped", str(e)
                except BaseException as e:  # noqa: BLE001 (a driver's own failure)
                    outcome = "failed"
                    why = "".join(traceback.format_exception_only(type(e), e)).strip()
                    frames = traceback.extract_tb(e.__traceback__)
                    if frames:
                        why += f" (at line {frames[-1].lineno})"
                print(json.dumps({"test": test_id, "outcome": outcome, "why": why}), flush=True)


if __name__ == "__main__":
    main()
