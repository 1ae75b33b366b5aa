"""The manager's data: the cluster snapshot, the decision, reason codes, the placement config.
Pure; imports nothing else of the manager.
"""
