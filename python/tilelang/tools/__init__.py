"""Tools around kernels: layout pictures (`plot_layout`), the register layouts the
compiler chose for a kernel's fragments (`fragment_layouts`), and a roofline estimate
(`Analyzer.analysis(kernel, device)`)."""
from .analyzer import AnalysisResult, Analyzer  # noqa: F401
from .plot_layout import fragment_layouts, plot_layout  # noqa: F401

__all__ = ["plot_layout", "fragment_layouts", "Analyzer", "AnalysisResult"]
