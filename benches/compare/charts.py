"""The chart of a run: median times on a log scale (needs matplotlib)."""

from __future__ import annotations

from pathlib import Path

from .harness import Cell


def chart(cells: list[Cell], engines: list[str], path: Path, title: str) -> bool:
    """Median times on a log scale: one panel per layout, one bar per engine and query
    (False, and no chart, without matplotlib)."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = list(dict.fromkeys(c.layout for c in cells))
    queries = list(dict.fromkeys(c.query for c in cells))
    index = {(c.layout, c.query, c.engine): c for c in cells}
    fig, axes = plt.subplots(
        len(layouts),
        1,
        figsize=(max(12, len(queries) * 1.1), 3.6 * len(layouts)),
        squeeze=False,
        sharey=True,
    )
    width = 0.8 / max(1, len(engines))
    for ax, layout in zip(axes[:, 0], layouts, strict=True):
        for i, engine in enumerate(engines):
            xs, ys = [], []
            for j, query in enumerate(queries):
                c = index.get((layout, query, engine))
                if c is not None and c.ok:
                    xs.append(j + (i - (len(engines) - 1) / 2) * width)
                    ys.append(c.median_ms())
            ax.bar(xs, ys, width, label=engine, color=f"C{i}")
        ax.set_yscale("log")
        ax.set_ylabel("median ms")
        ax.set_title(layout, loc="left", fontsize=10)
        ax.set_xticks(range(len(queries)))
        ax.set_xticklabels(queries, rotation=30, ha="right", fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0, 0].legend(ncols=len(engines), fontsize=8, loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
