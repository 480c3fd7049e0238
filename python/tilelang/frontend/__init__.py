"""Front end: reads a kernel's Python AST and builds the C++ IR (see parser.py)."""
from .parser import PrimFunc, parse_prim_func  # noqa: F401
