"""Device descriptions with upstream TileLang's names (``tilelang.carver.arch``). The
scheduling templates of upstream's carver (roller, MatmulTemplate) are not provided."""
from . import arch  # noqa: F401
