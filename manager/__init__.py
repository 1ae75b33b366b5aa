"""The manager: snapshot model, planner, confidence gates, executor and coordination."""
