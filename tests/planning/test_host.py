"""Host facts from a fake /proc/meminfo and a real disk."""

from __future__ import annotations

from pathlib import Path

from kura.planning.host import host_facts, read_meminfo

MEMINFO = """MemTotal:       65536000 kB
MemFree:         1000000 kB
MemAvailable:   32768000 kB
HugePages_Total:       0
"""


def test_meminfo_and_disk(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    facts = host_facts(tmp_path / "runs" / "not-yet", meminfo=meminfo)
    assert facts.ram_total_gib == round(65536000 * 1024 / 2**30, 2)
    assert facts.ram_available_gib == round(32768000 * 1024 / 2**30, 2)
    assert facts.disk_path == str(tmp_path)
    assert facts.disk_free_gib > 0
    assert facts.cpu_count >= 1
    assert read_meminfo(meminfo)["HugePages_Total"] == 0


def test_missing_meminfo(tmp_path: Path) -> None:
    facts = host_facts(tmp_path, meminfo=tmp_path / "absent")
    assert facts.ram_total_gib is None
    assert facts.ram_available_gib is None
    assert facts.to_dict()["disk_path"] == str(tmp_path)
