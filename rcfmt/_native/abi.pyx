"""The block executor's tables, as Python reads them (declared in ``abi.pxd``): the
per-scan column spec (``S_*``, :data:`S_COLS` int64 per column), a block's chunk records
(``C_*``), what :func:`rcfmt._native.block.run_block` returns per column (``R_*``), the
physical kinds (``KIND_*``) and the statuses of a refused column (``ST_*``;
:mod:`rcfmt.scan.refusals` explains them)."""

__all__ = ["S_COLS", "C_COLS", "R_COLS", "KIND_FIXED", "KIND_BOOL", "KIND_VARBINARY", "ST_OK"]
