"""Make: ``definitions.py`` (rules, named after their targets). No references (the code graph
holds a Makefile's targets as definitions only) and no rules in SQL.
"""
