"""What every package of rcfmt runs on, below all of them: where decoded buffers are
allocated (:mod:`~rcfmt.runtime.memory`, Arrow's pool), how many threads a CPU pool
uses and the one process-wide pool per purpose (:mod:`~rcfmt.runtime.threads`), and
progress bars for long writes (:mod:`~rcfmt.runtime.progress`), and the record classes
the other packages declare their plain data with (:mod:`~rcfmt.runtime.records`: dataclasses'
fields without their import cost). These modules import nothing of rcfmt but
:mod:`rcfmt.errors`."""
