"""Known-bug variants of the core, one module per reported bug (B1-B17).

Each ``bNN_*`` module differs from the core only in the code path its bug
lives in (its docstring names the overridden method and, where one override
could not express the bug, why) and exposes `adapter()`, a factory of a
`VariantAdapter` (a `ManagerAdapter` building the variant's stack).

`VARIANTS` maps the bug id ("B1" ... "B17") to that factory.
"""

from collections.abc import Callable

from models_spec.variants import (
    b01_generation_split,
    b02_constructor_failure_split,
    b03_dispose_after_release,
    b04_warm_fast_path,
    b05_failed_remove_desync,
    b06_failed_remove_moves,
    b07_duplicate_lru,
    b08_failure_erases_success,
    b09_failed_eviction_drops,
    b10_alias_not_key,
    b11_nested_decorators,
    b12_lock_table_leak,
    b13_refresh_phantom,
    b14_admission_overshoot,
    b15_queue_lock_across_unload,
    b16_error_masking,
    b17_unload_under_lease,
)
from models_spec.variants._base import VariantAdapter as VariantAdapter

VariantAdapterFactory = Callable[[], VariantAdapter]

VARIANTS: dict[str, VariantAdapterFactory] = {
    module.BUG: module.adapter
    for module in (
        b01_generation_split,
        b02_constructor_failure_split,
        b03_dispose_after_release,
        b04_warm_fast_path,
        b05_failed_remove_desync,
        b06_failed_remove_moves,
        b07_duplicate_lru,
        b08_failure_erases_success,
        b09_failed_eviction_drops,
        b10_alias_not_key,
        b11_nested_decorators,
        b12_lock_table_leak,
        b13_refresh_phantom,
        b14_admission_overshoot,
        b15_queue_lock_across_unload,
        b16_error_masking,
        b17_unload_under_lease,
    )
}
"""Bug id -> factory of the variant's adapter, in bug order."""

__all__ = ["VARIANTS", "VariantAdapter", "VariantAdapterFactory"]
