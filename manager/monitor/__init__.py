"""Sources -> snapshot: the Admin API and the stats and load topics, read into one immutable
snapshot per cycle.
"""
