"""The suite's Hydra plugins: the launcher ``hydra/launcher=fused`` and the default sweeper
``hydra/sweeper=keeping``, here because Hydra finds plugins only in the ``hydra_plugins`` namespace
package."""
