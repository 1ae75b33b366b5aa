"""ZooKeeper: leader election, the fencing epoch, the in-flight plan and its move budget, the
placement config store.
"""
