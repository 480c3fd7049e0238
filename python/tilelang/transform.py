"""Pass configuration keys, as TileLang programs name them: ``pass_configs={
tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}``. Plain strings ("tl.enable_fast_math")
work too. Keys this compiler has no use for are accepted and ignored."""
from __future__ import annotations

import enum


class PassConfigKey(str, enum.Enum):
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_access"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"  # 32 or 64: see legalize-index-width
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"

    def __str__(self):
        return self.value
