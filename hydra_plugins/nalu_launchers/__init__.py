"""The suite's Hydra launcher (``hydra/launcher=fused``), here because Hydra finds launchers only
in the ``hydra_plugins`` namespace package."""
