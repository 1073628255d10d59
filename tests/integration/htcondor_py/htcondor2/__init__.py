"""The part of HTCondor's Python bindings the DAGMan drivers call to
submit a DAG: Submit.from_dag, which names the DAG for Condor.submit."""

import os


class Submit:
    """A DAG to submit (condor_submit_dag's submit description)."""

    def __init__(self, dag=None, options=None):
        self.dag = dag
        self.options = dict(options or {})

    @staticmethod
    def from_dag(filename, options=None):
        return Submit(os.path.abspath(str(filename)), options)
