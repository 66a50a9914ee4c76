"""Figure helpers shared by the case studies: matplotlib on the non-interactive Agg backend."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot``, with the Agg backend selected first (figures are only written to files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path, dpi: int = 120, **layout: Any) -> str:
    """``fig.tight_layout(**layout)``, write ``fig`` to ``path`` at ``dpi``, close it; returns the file name."""
    import matplotlib.pyplot as plt

    fig.tight_layout(**layout)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return Path(path).name
