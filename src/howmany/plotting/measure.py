"""Figure helpers for the book's measure chapters: functions that draw on a given ax.

Each public function is listed in __all__ (re-exported by howmany.plotting).
"""

__all__: list[str] = []
