"""The manager's commands: manager, snapshot, plan, actions, domains, groups, maintenance."""
