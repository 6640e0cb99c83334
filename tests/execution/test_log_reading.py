"""Reading step logs for `kura run logs`: bounded tails and follow-from-offset."""

from __future__ import annotations

from pathlib import Path

from kura.execution.logs import collapse_redraws, read_log_since, read_log_tail


def test_collapse_redraws() -> None:
    assert collapse_redraws("a\rsteps 1\rsteps 2\nnext\n") == "steps 2\nnext\n"


def test_tail_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("".join(f"line {n}\n" for n in range(1000)) + "\rsteps: 1\rsteps: 2")
    assert read_log_tail(log, lines=3) == "line 998\nline 999\nsteps: 2"
    assert read_log_tail(log, lines=2, max_bytes=40).endswith("line 999\nsteps: 2")
    assert read_log_tail(tmp_path / "none.log") == ""


def test_follow_from_offset(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes("épоch 1\n".encode())
    text, offset = read_log_since(log, 0)
    assert text == "épоch 1\n"
    encoded = "ü".encode()
    with open(log, "ab") as handle:
        handle.write(b"next " + encoded[:1])
    text, offset2 = read_log_since(log, offset)
    assert text == "next "
    with open(log, "ab") as handle:
        handle.write(encoded[1:] + b"\n")
    text, offset3 = read_log_since(log, offset2)
    assert text == "ü\n"
    assert offset3 == log.stat().st_size
    assert read_log_since(log, offset3 + 100)[1] == log.stat().st_size
