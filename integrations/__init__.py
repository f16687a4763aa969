"""Adapters that let agents built with other frameworks use the blackboard as their memory.

Each lives in its own module and needs its own extra (``pip install
'reactive-blackboard[langgraph]'`` and so on); importing one without its framework says in
one line what to install. This package imports nothing of them itself.
"""
