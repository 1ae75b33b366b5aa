"""The cycle loop: one snapshot, one decision, one outcome per cycle; the rules the daemon applies
to its own situation.
"""
