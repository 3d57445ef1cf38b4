"""The ``factsieve`` command line: an edge beside ``api`` and ``workers``."""
