"""Pure decisions over a snapshot: planner, confidence gates, heal, balance, placement and its
checks. No I/O, no clock.
"""
