"""What a scan did: :class:`ScanStats`, summed over the blocks, files and threads of a
scan (every reader's ``stats``)."""
from __future__ import annotations

from ..runtime.records import record, fields

__all__ = ["ScanStats"]


@record
class ScanStats:
    """What a scan did. Counts of pages and rows decoded are summed over columns.

    ``bytes_read``: bytes of the pages (and the gaps coalesced with them) the scan read,
    also when a remote file's open had them in its tail already; ``requests``: reads
    made of the files (on object storage, requests sent), the opens' included. What
    crossed the network is the file's own count (:attr:`RcfmtFile.bytes_read`)."""

    files_total: int = 0
    files_pruned: int = 0
    blocks_total: int = 0
    blocks_pruned_stats: int = 0
    blocks_pruned_bloom: int = 0
    blocks_pruned_pages: int = 0
    blocks_pruned_index: int = 0  # by bitmap indexes
    pages_total: int = 0
    pages_read: int = 0
    rows_total: int = 0
    rows_decoded: int = 0
    rows_selected: int = 0
    rows_selected_index: int = 0  # rows selected by bitmap indexes alone (the filter decided without decoding)
    bytes_read: int = 0
    requests: int = 0  # reads from files (on object storage, one request each)

    def add(self, other: "ScanStats") -> None:
        mine, theirs = self.__dict__, other.__dict__
        for name in _STATS_FIELDS:
            mine[name] += theirs[name]

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in fields(self)}

    def __str__(self) -> str:
        pruned = self.blocks_pruned_stats + self.blocks_pruned_bloom + self.blocks_pruned_index + self.blocks_pruned_pages
        return (f"files {self.files_total - self.files_pruned}/{self.files_total}, "
                f"blocks {self.blocks_total - pruned}"
                f"/{self.blocks_total} (pruned: stats {self.blocks_pruned_stats}, bloom {self.blocks_pruned_bloom}, "
                f"index {self.blocks_pruned_index}, pages {self.blocks_pruned_pages}), "
                f"pages read {self.pages_read}/{self.pages_total}, rows decoded {self.rows_decoded}, "
                f"selected {self.rows_selected}/{self.rows_total} ({self.rows_selected_index} by index), "
                f"bytes read {self.bytes_read} in {self.requests} requests")


_STATS_FIELDS = fields(ScanStats)
