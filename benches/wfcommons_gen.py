#!/usr/bin/env python3
"""Writes the WfCommons workflows `gridbed bench wfformat` parses and simulates
and the 100,000-task pressure test runs: epigenomics instances of 10,000 and
100,000 tasks from the `wfcommons` package's own recipe (WfFormat 1.6, as
today's package writes it). Seeded: the same tasks, sizes and runtimes each
time (only the uuid4 file names differ).

    python3 -m venv /tmp/wfc && /tmp/wfc/bin/pip install wfcommons==1.6
    /tmp/wfc/bin/python benches/wfcommons_gen.py target/wfcommons
"""
import pathlib
import random
import sys

import numpy

from wfcommons import WorkflowGenerator
from wfcommons.wfchef.recipes import EpigenomicsRecipe

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/wfcommons")
out.mkdir(parents=True, exist_ok=True)
for n in (10_000, 100_000):
    path = out / f"epigenomics-{n}.json"
    if path.exists():
        print(f"{path} exists")
        continue
    random.seed(n)
    numpy.random.seed(n)
    workflow = WorkflowGenerator(EpigenomicsRecipe.from_num_tasks(n)).build_workflow()
    workflow.write_json(path)
    print(f"{path}: {len(workflow.tasks)} tasks")
