"""The grid world of Figure 5: the environment (env.py), the A3C agents (a3c.py) and the task
(time_tracking.py)."""
