"""Layout pictures, as upstream's `tilelang.tools.plot_layout` draws them: a grid with one
cell per element. For a fragment (`T.Fragment`, or one of `fragment_layouts(kernel)`) each
cell names the thread and register that hold the element and is coloured by thread; for a
`T.Layout` each cell shows where the element goes. SVG is written without any dependency;
PNG and PDF need matplotlib."""
from __future__ import annotations

import colorsys
import html
import os

from ..layout import Fragment, Layout


class CompiledFragment(Fragment):
    """A register layout the CUDA lowering chose (see fragment_layouts): which thread and
    register hold element (i, j), and how many threads hold a copy."""

    def __init__(self, table):
        rows, cols = int(table["rows"]), int(table["cols"])
        self.name, self.description, self.origin = table["name"], table["layout"], table["origin"]
        self.num_threads, self.num_local = int(table["threads"]), int(table["locals"])
        self._thread, self._local, self._replicas = table["thread"], table["local"], table["replicas"]
        self.cols = cols
        super().__init__((rows, cols), forward_thread_fn=self.thread_of, forward_index_fn=self.local_of,
                         replicate=max(self._replicas) if self._replicas else 1)

    def thread_of(self, i, j=0, rep=0):
        return self._thread[i * self.cols + j]

    def local_of(self, i, j=0):
        return self._local[i * self.cols + j]

    def replicas_of(self, i, j=0):
        return self._replicas[i * self.cols + j]

    def __repr__(self):
        return f"CompiledFragment({self.name}: {self.description}, {self.num_threads} threads x {self.num_local} registers)"


def fragment_layouts(func, target="cuda -arch=sm_90a"):
    """The register layouts the CUDA lowering chooses for the fragments of `func` (a
    @T.prim_func with one T.Kernel, or a compiled kernel), by fragment name. No GPU needed.
    Fragments kept in shared memory (no GEMM or register strip fixes their layout) are not
    listed; `kernel.get_remarks()` names them."""
    from .. import _tl
    from ..jit.target import resolve

    prim = getattr(func, "func", func)  # a JITKernel keeps its prim_func
    t = resolve(target)
    if t.kind != "cuda":
        raise ValueError(f"fragment_layouts: target must be a CUDA target (fragments are registers there), got {target!r}")
    config = {"tl.target_arch": t.arch or "sm_90a"}
    return {d["name"]: CompiledFragment(d) for d in _tl.fragment_layouts(prim.node, config)}


def plot_layout(layout, save_directory="./tmp", name: str = "layout", colormap: str | None = None,
                verbose: bool = False, formats="pdf", view: str = "input", grid_shape=None):
    """Draws `layout` as a grid, one cell per element, into save_directory/name.<format>
    for each of `formats` ("pdf", "png", "svg", "all", a comma-separated string or a list).
    Returns the paths written."""
    fmts = _formats(formats)
    grid = _grid(layout, view, grid_shape)
    if verbose:
        for (i, j), (label, _) in sorted(grid["cells"].items()):
            print(f"({i}, {j}) -> {label.replace(chr(10), ' ')}")
    os.makedirs(save_directory, exist_ok=True)
    paths = []
    for fmt in fmts:
        path = os.path.join(save_directory, f"{name}.{fmt}")
        if fmt == "svg":
            _write_svg(grid, path, title=grid["title"])
        else:
            _write_matplotlib(grid, path, fmt, colormap or ("RdPu" if grid["fragment"] else "Spectral"))
        paths.append(path)
    return paths


def _formats(formats):
    if isinstance(formats, str):
        formats = ["pdf", "png", "svg"] if formats == "all" else [f.strip() for f in formats.split(",") if f.strip()]
    out = [str(f).lower() for f in formats]
    for f in out:
        if f not in ("pdf", "png", "svg"):
            raise ValueError(f"plot_layout: formats must be pdf, png, svg or all, got {f!r}")
    return out


def _grid(layout, view, grid_shape):
    """{rows, cols, cells: {(i, j): (label, colour key)}, title, fragment}."""
    if not isinstance(layout, Layout):
        raise TypeError(f"plot_layout: expected a T.Layout or T.Fragment, got {type(layout).__name__}")
    shape = layout.get_input_shape()
    if not shape:
        raise ValueError(f"plot_layout: the layout {layout!r} has no shape to draw")
    one_d = len(shape) == 1 and not isinstance(layout, CompiledFragment)
    if len(shape) == 1:
        shape = [shape[0], 1]
    if len(shape) != 2:
        raise ValueError(f"plot_layout: only 1-D and 2-D layouts are drawn, got shape {tuple(shape)}")
    rows, cols = int(shape[0]), int(shape[1])
    cells = {}
    if isinstance(layout, Fragment):
        if layout.forward_thread_fn is None:
            raise ValueError("plot_layout: this fragment has no thread function (forward_thread_fn)")
        for i in range(rows):
            for j in range(cols):
                at = (i,) if one_d else (i, j)
                t = _scalar(layout.forward_thread_fn(*at))
                loc = layout.forward_fn(*at) if layout.forward_fn is not None else None
                loc = _scalar(loc) if loc is not None else None
                if t is None or t < 0:
                    cells[(i, j)] = ("-", None)
                    continue
                label = f"T{t}" + (f"\nL{loc}" if loc is not None else "")
                if isinstance(layout, CompiledFragment) and layout.replicas_of(i, j) > 1:
                    label += f"\nx{layout.replicas_of(i, j)}"
                cells[(i, j)] = (label, t)
        title = getattr(layout, "description", None) or "fragment"
        return {"rows": rows, "cols": cols, "cells": cells, "title": title, "fragment": True}
    if view not in ("input", "output"):
        raise ValueError(f"plot_layout: view must be 'input' or 'output', got {view!r}")
    if layout.forward_fn is None:
        raise ValueError(f"plot_layout: the {layout.kind} layout has no index function to draw")
    if grid_shape is not None:
        r, c = (int(x) for x in grid_shape)
        if r * c != rows * cols:
            raise ValueError(f"plot_layout: grid_shape {grid_shape} has {r * c} cells, the layout {rows * cols}")
    for i in range(rows):
        for j in range(cols):
            out = layout.forward_fn(*((i,) if one_d else (i, j)))
            out = list(out) if isinstance(out, (list, tuple)) else [out]
            label = ", ".join(str(_scalar(o)) for o in out)
            flat = _flatten(out, layout)
            key = (i, j) if view == "input" else None
            cells[key or (flat // cols, flat % cols)] = (label if view == "input" else f"{i}, {j}", flat)
    if grid_shape is not None and view == "input":
        r, c = (int(x) for x in grid_shape)
        cells = {(k // c, k % c): cells[(k // cols, k % cols)] for k in range(rows * cols)}
        rows, cols = r, c
    return {"rows": rows, "cols": cols, "cells": cells, "title": f"{layout.kind} layout", "fragment": False}


def _scalar(v):
    if isinstance(v, (list, tuple)):
        v = v[0] if v else None
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def _flatten(out, layout):
    vals = [_scalar(o) for o in out]
    flat = 0
    shape = layout.get_input_shape()
    width = int(shape[-1]) if shape else 1
    for v in vals:
        flat = flat * width + (v if isinstance(v, int) else 0)
    return flat


def _colour(key, n):
    if key is None:
        return "#eeeeee"
    h = (key * 0.618033988749895) % 1.0 if n > 12 else key / max(n, 1)
    r, g, b = colorsys.hsv_to_rgb(h, 0.35, 0.97)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _write_svg(grid, path, title):
    rows, cols, cells = grid["rows"], grid["cols"], grid["cells"]
    cw, ch, top, left = 44, 34, 40, 30
    keys = sorted({k for _, k in cells.values() if k is not None})
    rank = {k: i for i, k in enumerate(keys)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + cols * cw + 10}" height="{top + rows * ch + 10}" '
           'font-family="monospace">',
           f'<text x="{left}" y="18" font-size="13">{html.escape(title)}</text>']
    for j in range(cols):
        out.append(f'<text x="{left + j * cw + cw / 2}" y="{top - 6}" font-size="9" text-anchor="middle">{j}</text>')
    for i in range(rows):
        out.append(f'<text x="{left - 4}" y="{top + i * ch + ch / 2 + 3}" font-size="9" text-anchor="end">{i}</text>')
        for j in range(cols):
            label, key = cells.get((i, j), ("", None))
            x, y = left + j * cw, top + i * ch
            fill = _colour(rank.get(key), len(keys))
            out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{fill}" stroke="#555" stroke-width="0.5"/>')
            lines = label.split("\n")
            for k, line in enumerate(lines):
                ty = y + ch / 2 + (k - (len(lines) - 1) / 2) * 10 + 3
                out.append(f'<text x="{x + cw / 2}" y="{ty}" font-size="9" text-anchor="middle">{html.escape(line)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def _write_matplotlib(grid, path, fmt, colormap):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError(f"plot_layout(formats={fmt!r}) needs matplotlib (pip install matplotlib); "
                           "formats='svg' needs nothing") from None
    rows, cols, cells = grid["rows"], grid["cols"], grid["cells"]
    keys = sorted({k for _, k in cells.values() if k is not None})
    rank = {k: i for i, k in enumerate(keys)}
    cmap = plt.get_cmap(colormap)
    fig, ax = plt.subplots(figsize=(max(4, cols * 0.6), max(3, rows * 0.5)))
    for (i, j), (label, key) in cells.items():
        colour = "#eeeeee" if key is None else cmap(0.15 + 0.7 * rank[key] / max(len(keys) - 1, 1))
        ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="black", linewidth=0.3))
        ax.text(j + 0.5, i + 0.5, label, ha="center", va="center", fontsize=6)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=6)
    ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=6)
    ax.set_title(grid["title"], fontsize=9)
    ax.set_aspect("equal")
    fig.tight_layout()
    fig.savefig(path, format=fmt)
    plt.close(fig)
