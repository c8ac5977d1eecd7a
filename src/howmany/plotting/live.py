"""The lab's live view: cramming progress drawn in place in a notebook while it runs.

A ``cram`` callback (``howmany.lab.cram_text(..., callback=view)``) that updates one output
through an IPython display handle: a progress bar above the loss / verified-prefix figure while
the optimiser runs, replaced by the final figure alone when closed, so an executed notebook
keeps no progress text.

Explained in: book/lab.md
"""

from __future__ import annotations

import html
import time

from .experiments import plot_cram_progress

__all__ = ["LiveView"]


class LiveView:
    """A ``cram`` callback that shows progress live in a notebook and keeps only the figure.

    One output, updated in place through an IPython display handle at most every ``every_s``
    seconds: while cramming runs, a progress bar (tqdm's meter) above the current loss /
    verified-prefix figure; :meth:`close` replaces it with the final figure alone, so an
    executed notebook keeps no progress text.

    Explained in: book/lab.md
    """

    def __init__(self, n_tokens: int, *, every_s: float = 1.0, figsize=(8, 3)):
        import matplotlib.pyplot as plt
        from IPython.display import display

        self.n_tokens, self.every_s = int(n_tokens), float(every_s)
        self.hist = {"step": [], "loss": [], "n_verified": [], "length": []}
        self.fig, self.axes = plt.subplots(1, 2, figsize=figsize)
        plt.close(self.fig)  # shown only through the display handle, never by the backend
        self._t0 = self._last = time.perf_counter()
        self._handle = display(self._live(), display_id=True)

    def _live(self):
        """The running view: HTML with the bar and the figure as an inline PNG."""
        import base64
        import io

        from IPython.display import HTML
        from tqdm import tqdm

        done = int(self.hist["n_verified"][-1]) if self.hist["step"] else 0
        step = self.hist["step"][-1] if self.hist["step"] else 0
        meter = tqdm.format_meter(done, self.n_tokens, time.perf_counter() - self._t0,
                                  unit="tok", prefix="verified")
        buf = io.BytesIO()
        self._redraw().savefig(buf, format="png", dpi=80, bbox_inches="tight")
        png = base64.b64encode(buf.getvalue()).decode()
        return HTML(f'<div><progress value="{done}" max="{self.n_tokens}" style="width:40%">'
                    f'</progress> <code>{html.escape(meter)} · step {step}</code><br>'
                    f'<img src="data:image/png;base64,{png}" style="max-width:100%"></div>')

    def _redraw(self):
        for ax in self.axes:
            ax.clear()
        plot_cram_progress(self.axes, self.hist, self.n_tokens)
        return self.fig

    def __call__(self, step: int, info: dict) -> None:
        self.hist["step"].append(int(step))
        for key in ("loss", "n_verified", "length"):
            self.hist[key].append(float(info[key][0]) if key in info else float("nan"))
        if time.perf_counter() - self._last >= self.every_s:
            self._handle.update(self._live())
            self._last = time.perf_counter()

    def close(self):
        """Replace the running view by the final figure and return it (for ``savefig``)."""
        self._handle.update(self._redraw())
        return self.fig
