"""Plotting: the book's style, ``savefig``, and the ``ax``-taking figure helpers of each part.

Library modules return values and never plot; chapters draw through these functions.
``style`` holds what every chapter shares; each part of the book keeps its figure helpers in
its own submodule (``theory``, ``measure``, ``experiments``, ``copying``), all re-exported here
so a chapter simply calls ``plotting.<function>(ax, ...)``; ``live`` holds the lab's
in-place view of a running cramming job.

Explained in: book/reproducibility.md
"""

from .style import (BOUND_STYLE, DISTINCT_COLORS, MARKERS, distinct_color, figures_dir,  # noqa: F401
                    savefig, set_style)
from .theory import *  # noqa: F401,F403
from .measure import *  # noqa: F401,F403
from .experiments import *  # noqa: F401,F403
from .copying import *  # noqa: F401,F403
from .live import LiveView  # noqa: F401
