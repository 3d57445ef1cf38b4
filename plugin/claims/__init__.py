"""Claims: posts grouped into the claims they make, across languages (issue 38).

``cluster`` decides, purely, which earlier post's claim a new post joins and which post leads a
claim; ``join.json`` is the served join rule (data, chosen by ``factsieve evaluate-clusters``).
"""
