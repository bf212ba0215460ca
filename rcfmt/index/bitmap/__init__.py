"""Bitmap indexes: bytes (:mod:`.layout`), builder (:mod:`.build`), evaluator (:mod:`.answer`)."""
