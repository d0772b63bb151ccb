"""Program evaluation (Figure 4): the programs (generate.py) and the task that reads them
(evaluation.py)."""
