"""sieve: cycle-accurate simulation of MoE LLM serving on GPUs with HBM-PIM.

Importing ``sieve`` is cheap: the compiled engine is loaded by :mod:`sieve.dram` only when it is
used, and plotting imports matplotlib lazily.
"""

__version__ = "0.1.0"
