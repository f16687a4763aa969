"""Worker processes: roles, leases, the dataflow runner, heartbeats and metrics.

A worker process is started by the ``blackboard worker`` command (:mod:`cli`), which also
caps native thread pools before numpy loads (:func:`cli.cap_native_threads`).
"""
