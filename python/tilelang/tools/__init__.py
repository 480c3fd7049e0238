"""Tools around kernels: layout pictures (`plot_layout`) and the register layouts the
compiler chose for a kernel's fragments (`fragment_layouts`)."""
from .plot_layout import fragment_layouts, plot_layout  # noqa: F401

__all__ = ["plot_layout", "fragment_layouts"]
