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


#: colours of the contact modes separated, sticking, sliding (codes 0, 1, 2)
MODE_COLORS = ("#dddddd", "#2c7bb6", "#d7191c")


def plot_mode_chart(ax: Any, t: Any, modes: Any, names: Any) -> None:
    """The contact-mode chart on ``ax``: one row per contact (``modes``: steps x contacts, codes 0
    separated, 1 sticking, 2 sliding; ``names`` label the rows), time ``t`` (the knots) on x."""
    import numpy as np
    from matplotlib.colors import ListedColormap

    m = np.asarray(modes)
    ax.imshow(m.T, aspect="auto", cmap=ListedColormap(list(MODE_COLORS)), vmin=0, vmax=2, interpolation="nearest",
              extent=(t[0], t[-1], m.shape[1] - 0.5, -0.5))
    ax.set_yticks(range(m.shape[1]), list(names), fontsize=8)
    ax.set_xlabel("t (s)")
    ax.set_title("contact modes per step: grey separated, blue sticking, red sliding", fontsize=8)
