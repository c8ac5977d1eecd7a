"""howmany: an executable book on "How Many Different Outputs Can a Transformer Generate?".

Reproduces and extends Meyer, Michelessa, Chaux & Tan (ICML 2026, arXiv 2605.22223).
Modules are imported by name (``from howmany import bounds, results``); this file
imports nothing heavy so that ``import howmany`` stays instant.

Explained in: book/intro.md
"""

__version__ = "0.1.0"
