"""The reproduction suite around the units library (``nalu``): the runner, provenance, loggers and
file helpers, and the builders of every table and figure in ``results/``."""
