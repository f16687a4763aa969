"""``python -m gateway``: run the gateway with settings from the environment."""

from .server import main

main()
