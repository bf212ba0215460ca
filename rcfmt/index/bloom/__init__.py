"""Bloom filters: the SBBF (:mod:`.sbbf`) and the file's per-chunk filters (:mod:`.chunks`)."""
