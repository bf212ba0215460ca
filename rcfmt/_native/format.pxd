# The numbers of the byte format (docs/FORMAT.md) that the native modules share, defined
# once: page header size, page types and flags, codec and encoding ids, the reader's hard
# limits, the footer's record sizes. Python holds the same numbers in rcfmt.format.layout,
# rcfmt.codecs and the encodings' ids; rcfmt._native.pages.format_constants() exports these
# and tests/test_format_constants.py checks that both agree.

cdef enum:
    PAGE_HEADER_SIZE = 32
    PAGE_DATA = 0
    PAGE_DICTIONARY = 1
    FLAG_VALIDITY = 1

    CODEC_NONE = 0
    CODEC_ZSTD = 1
    CODEC_LZ4 = 2

    ENC_PLAIN = 0
    ENC_DICTIONARY = 1
    ENC_RLE = 2
    ENC_BITPACK = 3
    ENC_DELTA = 4
    ENC_ALP = 5
    ENC_DELTA_LENGTH = 6
    ENC_BYTE_SPLIT = 7
    ENC_ALP_SPLIT = 8

    BLOCK_RECORD_SIZE = 32
    MIN_BLOOM_LENGTH = 36

    # the hard limits a reader enforces before allocating (writers never exceed them)
    MAX_PAGE_ROWS = 1048576        # 1 << 20
    MAX_PAGE_BYTES = 2147483647    # 2^31 - 1
