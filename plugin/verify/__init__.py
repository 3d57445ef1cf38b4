"""Claim verification: the previously-fact-checked lookup (``lookup``), and the scorer that
measures verification the way the AVeriTeC shared task does (``scoring``, ``wordnet``).

Import the modules themselves: this package imports nothing, so the scorer does not pull in
the matcher and the lookup does not pull in nltk.
"""
