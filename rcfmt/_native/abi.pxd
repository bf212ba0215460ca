# The block executor's tables (rcfmt/_native/block.pyx, column.pyx, gather.pyx): the
# per-scan column spec, a block's chunk records, the results per column, the physical
# kinds and the statuses. Python reads them from :mod:`rcfmt._native.abi`.
cpdef enum:
    # the per-scan column spec: S_COLS int64 per column
    S_KIND = 0        # KIND_*
    S_WIDTH = 1       # bytes per stored value (FIXED; 16 for decimal128), 1 for bools
    S_SIGNED = 2
    S_DECIMAL = 3     # 1: decimal128 (precision S_PRECISION checked)
    S_PRECISION = 4
    S_UTF8 = 5        # 1: strings (UTF-8 checked)
    S_LARGE = 6       # 1: int64 offsets (large_string / large_binary)
    S_CODES = 7       # 1: dictionary chunks keep their codes (read_dictionary)
    S_ENCODINGS = 8   # bit e set: encoding id e is decoded here for this type
    S_DISCARD = 9     # 1: only its filter needs the column (a dictionary chunk returns no values)
    S_COLS = 10

cpdef enum:
    # a block's chunk records: C_COLS int64 per column
    C_OFFSET = 0
    C_LENGTH = 1
    C_DICT_LENGTH = 2
    C_DICT_SIZE = 3
    C_PAGES = 4
    C_ENCODING = 5
    C_COLS = 6

cpdef enum:
    # what run_block returns per column: R_COLS int64
    R_STATUS = 0      # ST_*: 0, or why the column was refused (rcfmt.scan.refusals explains it)
    R_PAGE = 1        # the page that failed (-1: the dictionary page or none)
    R_VALUES = 2      # arena offset of the values / kept codes / offsets
    R_VALID = 3       # arena offset of the validity bitmap
    R_NULLS = 4       # null rows (0: no bitmap)
    R_DATA = 5        # bytes of string/binary data
    R_DICT = 6        # 1: codes kept (a dictionary chunk of a read_dictionary column)
    R_DSIZE = 7       # entries of the kept dictionary
    R_PAGES = 8       # data pages whose bodies were read (checked, decompressed)
    R_ROWS = 9        # rows of those pages
    R_COLS = 10

cpdef enum:
    KIND_FIXED = 0
    KIND_BOOL = 1
    KIND_VARBINARY = 2

cpdef enum:
    ST_OK = 0
    ST_UNSUPPORTED = 1  # an encoding this type has no kernel for here
    ST_CHUNK = 2        # chunk record disagrees with its encoding or the bytes read
    ST_PAGES = 3        # a header or body check (the pipeline's Failure)
    ST_COUNTS = 4       # pages or rows disagree with the footer
    ST_DICTIONARY = 5   # the dictionary page disagrees with its record
    ST_VALUES = 6       # values refused by a kernel
    ST_INVALID = 7      # ill-formed UTF-8, a decimal beyond its precision
    ST_TOO_BIG = 8      # more than 2 GiB of data for 32-bit offsets
    ST_MEMORY = 9
    ST_PYTHON = 10      # the Python codec fallback raised (columns from there on)
    ST_SKIPPED = 11     # not decoded: the filter's mask was already empty (short_circuit)
    ST_UNLISTED = 12    # a wanted row lies in none of the pages listed (the caller's error)
