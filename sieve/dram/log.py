"""The command-log record: one row per issued DRAM/PIM command.

The engine writes its log in exactly this layout (``LogRec`` in ``sieve/_dram.pxd``; the
engine's ``LOG_DTYPE`` must equal this one, which :mod:`sieve.dram.device` asserts at import),
and the independent checker (:mod:`sieve.dram.checker`) reads it. This module is the one home
of the format, so neither side imports the other.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LOG_DTYPE"]

#: One record per issued command. ``tick``: engine tick of the command's first tick;
#: ``seq``: global issue order (orders commands at equal ticks); ``cmd``: index into
#: :data:`sieve.dram.commands.COMMANDS`; ``ch``: channel (simulated index); address fields are
#: -1 below the command's scope; ``row`` is -1 except for ACT/RD/WR/RDA/WRA/ACTAB/MACAB;
#: ``col`` is -1 except for column commands.
LOG_DTYPE = np.dtype([
    ("tick", np.int64), ("seq", np.int64), ("cmd", np.int32),
    ("ch", np.int32), ("pc", np.int32), ("sid", np.int32), ("bg", np.int32), ("bank", np.int32),
    ("row", np.int32), ("col", np.int32),
])
