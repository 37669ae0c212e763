"""pytest plugin: let ``pytest --nbval`` honour a trailing ``;`` like Jupyter does.

nbval >= 0.10 sends every cell with ``store_history=False``. IPython decides whether
``;`` silences a cell's result by looking at the last *stored* input, so under nbval
``plt.plot(x);`` still yields ``[<matplotlib.lines.Line2D at 0x...>]``, an output that
the notebook saved by JupyterLab / nbconvert does not have, and strict nbval fails
(nbval issue #194, IPython issue #14162). This plugin makes nbval execute cells with
``store_history=True``, as JupyterLab and nbconvert do. nbval never compares execution
counts, so nothing else changes.

Load it with ``python -m pytest -p tests.plugins.nbval_semicolon --nbval ...`` from the
repository root (``make test`` does).
"""

from __future__ import annotations


def pytest_configure(config):
    if not getattr(config.option, "nbval", False):
        return
    try:
        from nbval.kernel import RunningKernel
    except ImportError:  # nbval not installed: nothing to fix
        return

    def execute_cell_input(self, cell_input, allow_stdin=None):
        return self.kc.execute(
            cell_input,
            store_history=True,
            allow_stdin=allow_stdin,
            stop_on_error=False,
        )

    execute_cell_input.__doc__ = RunningKernel.execute_cell_input.__doc__
    RunningKernel.execute_cell_input = execute_cell_input
