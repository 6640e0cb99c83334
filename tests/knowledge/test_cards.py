from __future__ import annotations

from kura.knowledge.cards import entry_line, insert_entry, parse_card

CARD = """# flux2 — knowledge card

Some free notes the owner wrote.

## all
- training.learning_rate: 1.0e-4 — source: upstream (musubi docs/flux_2.md)
- training.network.rank: 32 — source: upstream (musubi docs/flux_2.md)

## character
- training.network.rank: 16 — source: owner (2026-11-02)
- training.epochs: 10
- training.seed: 7 — source: somebody
"""


def test_entries_carry_section_source_and_typed_value() -> None:
    entries, _ = parse_card(CARD)
    assert [(e.section, e.key, e.value, e.kind) for e in entries] == [
        ("all", "training.learning_rate", 1e-4, "upstream"),
        ("all", "training.network.rank", 32, "upstream"),
        ("character", "training.network.rank", 16, "owner"),
    ]
    assert entries[2].source == "owner (2026-11-02)"


def test_values_without_a_known_source_are_problems_not_values() -> None:
    _, problems = parse_card(CARD)
    assert len(problems) == 2
    assert "training.epochs` has no source" in problems[0]
    assert "unknown source 'somebody'" in problems[1]


def test_preferences_default_to_owner() -> None:
    entries, problems = parse_card("## all\n- training.optimizer: prodigy\n", default_kind="owner")
    assert problems == []
    assert entries[0].kind == "owner"
    assert entries[0].value == "prodigy"


def test_insert_goes_to_the_end_of_its_section_and_keeps_everything_else() -> None:
    line = entry_line("training.epochs", 12, "run 20261130-1042")
    text = insert_entry(CARD, "all", line)
    assert text.count("Some free notes the owner wrote.") == 1
    lines = text.splitlines()
    assert lines[lines.index("## all") + 3] == "- training.epochs: 12 — source: run 20261130-1042"
    assert lines[lines.index("## all") + 4] == ""


def test_insert_creates_a_missing_section() -> None:
    text = insert_entry(
        CARD, "style", entry_line("training.learning_rate", 5e-5, "agent (2026-11-30)")
    )
    assert text.endswith("## style\n- training.learning_rate: 5e-05 — source: agent (2026-11-30)\n")
    entries, _ = parse_card(text)
    assert entries[-1].value == 5e-5


def test_list_values_stay_on_one_line_and_read_back() -> None:
    line = entry_line("training.optimizer_args", ["weight_decay=0.01", "betas=0.9,0.95"], "owner")
    assert (
        line == '- training.optimizer_args: ["weight_decay=0.01", "betas=0.9,0.95"] — source: owner'
    )
    (entry,), _ = parse_card(line)
    assert entry.value == ["weight_decay=0.01", "betas=0.9,0.95"]


def test_a_null_value_keeps_its_source() -> None:
    from kura.knowledge.cards import entry_line, parse_card

    line = entry_line("training.timestep_sampling", None, "upstream (a doc)")
    entries, problems = parse_card(f"## all\n{line}\n")
    assert problems == []
    assert [(e.value, e.source) for e in entries] == [(None, "upstream (a doc)")]
