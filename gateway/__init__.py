"""The memory gateway: REST (and MCP) over HTTP, one Redis user per caller.

Above :mod:`memory` and beside :mod:`workers`; nothing below imports it. Its dependencies
are the ``[gateway]`` extra (``pip install 'reactive-blackboard[gateway]'``).
"""
