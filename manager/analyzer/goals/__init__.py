"""The planner's goals, one module each (``manager.analyzer.goal`` gives their shape; the
order they run in is ``manager.analyzer.planner.GOALS``)."""
