"""Likeness on real photographs (scikit-image's bundled samples) and on flat drawings."""

from __future__ import annotations

import random
from pathlib import Path

import imagehash
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageOps

from kura.dataset import inspect_dataset, likeness
from kura.dataset.likeness import MAX_PARTNERS, CandidateIndex, Picture
from kura.dataset.similarity import likeness_hashes, phash_batch

skimage_data = pytest.importorskip("skimage.data")

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "immunohistochemistry", "coins")


def photo(name: str) -> Image.Image:
    return Image.fromarray(getattr(skimage_data, name)()).convert("RGB")


def save(image: Image.Image, path: Path, **options: object) -> None:
    image.save(path, **options)
    path.with_suffix(".txt").write_text("a caption", encoding="utf-8")


def pairs_of(root: Path) -> list[dict]:
    return inspect_dataset(root).to_dict()["near_duplicate_pairs"]


def test_batched_phash_is_imagehash_phash() -> None:
    thumbnails = [
        np.asarray(photo(name).convert("L").resize((32, 32), Image.Resampling.BILINEAR))
        for name in PHOTOS
    ]
    batched = phash_batch(np.stack(thumbnails))
    expected = [int(str(imagehash.phash(Image.fromarray(t))), 16) for t in thumbnails]
    assert [int(v) for v in batched] == expected


def test_flat_pictures_get_no_hash_and_no_pairs(tmp_path: Path) -> None:
    assert likeness_hashes(Image.new("RGB", (300, 200), (200, 40, 40))) == {"flat": True}
    for index, colour in enumerate([(200, 40, 40), (20, 200, 90), (250, 250, 250)]):
        save(Image.new("RGB", (300, 200), colour), tmp_path / f"plain{index}.jpg")
    assert pairs_of(tmp_path) == []


def _crop(image: Image.Image, left: float, top: float, right: float, bottom: float) -> Image.Image:
    w, h = image.size
    return image.crop((int(w * left), int(h * top), w - int(w * right), h - int(h * bottom)))


COPIES = {
    "resized": (
        "astronaut",
        lambda im: im.resize((im.width * 2 // 3, im.height * 2 // 3), Image.Resampling.LANCZOS),
        "png",
    ),
    "re-encoded": ("coffee", lambda im: im, "jpg"),
    "cropped": ("chelsea", lambda im: _crop(im, 0.04, 0.03, 0.03, 0.05), "jpg"),
    "cropped one side": ("camera", lambda im: _crop(im, 0.0, 0.0, 0.08, 0.0), "jpg"),
    "flipped": ("rocket", ImageOps.mirror, "jpg"),
}


@pytest.mark.parametrize("case", sorted(COPIES))
def test_copy_of_a_photo_is_found_and_classified(tmp_path: Path, case: str) -> None:
    name, make, ext = COPIES[case]
    for other in PHOTOS:
        save(photo(other), tmp_path / f"{other}.png")
    save(make(photo(name)), tmp_path / f"copy.{ext}", quality=60)
    (pair,) = pairs_of(tmp_path)
    kind = case.split()[0]
    assert pair["kind"] == kind
    assert {pair["original"], pair["copy"]} == {f"{name}.png", f"copy.{ext}"}
    if kind in ("resized", "cropped"):
        assert pair["copy"] == f"copy.{ext}"
    assert pair["correlation"] >= likeness.MIN_CORRELATION


def test_different_photos_are_not_linked(tmp_path: Path) -> None:
    for name in (*PHOTOS, "hubble_deep_field", "moon", "brick", "grass", "gravel", "page"):
        image = photo(name)
        save(image, tmp_path / f"{name}.jpg", quality=90)
        save(image.resize((image.width // 2, image.height // 2)), tmp_path / f"{name}_s.png")
    pairs = pairs_of(tmp_path)
    assert all(p["copy"].split("_s")[0].split(".")[0] == p["original"].split(".")[0] for p in pairs)
    assert len(pairs) == len(PHOTOS) + 6


def drawing(index: int) -> Image.Image:
    """A distinct drawing on the same off-white background: a shape, a line and a label,
    each placed, sized and coloured at random."""
    rng = random.Random(index)
    image = Image.new("RGB", (512, 512), (245, 245, 240))
    draw = ImageDraw.Draw(image)

    def colour() -> tuple[int, int, int]:
        return (rng.randint(0, 200), rng.randint(0, 200), rng.randint(0, 200))

    x, y, size = rng.randint(20, 360), rng.randint(20, 360), rng.randint(40, 140)
    shape = index % 3
    if shape == 0:
        draw.ellipse((x, y, x + size, y + size), fill=colour())
    elif shape == 1:
        draw.rectangle((x, y, x + size, y + size // 2), outline=colour(), width=6)
    else:
        draw.polygon([(x, y + size), (x + size // 2, y), (x + size, y + size)], fill=colour())
    points = [(rng.randint(0, 511), rng.randint(0, 511)) for _ in range(2)]
    draw.line(points, fill=colour(), width=rng.randint(2, 6))
    label = f"no. {index}"
    draw.text((rng.randint(0, 400), rng.randint(0, 470)), label, fill=colour(), font_size=36)
    return image


def test_distinct_drawings_on_one_background_are_not_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(36):
        save(drawing(index), tmp_path / f"d{index:02d}.{'png' if index % 2 else 'jpg'}")
    confirmed: list[object] = []
    real_confirm = likeness.confirm

    def spy(*args: object) -> object:
        result = real_confirm(*args)  # type: ignore[arg-type]
        confirmed.append(result)
        return result

    monkeypatch.setattr(likeness, "confirm", spy)
    assert pairs_of(tmp_path) == []
    assert confirmed, "the hashes alone link some drawings; the confirm step must reject them"


def _pictures(hashes: list[int]) -> list[Picture]:
    return [
        Picture(f"p{i}", f"/nowhere/p{i}", f"content{i}", 64, 64, (h,) * 32)
        for i, h in enumerate(hashes)
    ]


@pytest.mark.parametrize("spread", [0, 3])
def test_candidate_comparisons_grow_linearly(spread: int) -> None:
    """Pictures that all hash (nearly) alike: the index compares a bounded number of
    hashes per picture and keeps at most MAX_PARTNERS candidates each."""
    rng = random.Random(spread)
    base = 0x9F3A_55C1_0E77_B2D4

    def near(count: int) -> list[int]:
        return [base ^ sum(1 << rng.randrange(64) for _ in range(spread)) for _ in range(count)]

    counts = {}
    for count in (500, 2000):
        index = CandidateIndex(_pictures(near(count)))
        candidates = index.candidates()
        assert len(candidates) <= MAX_PARTNERS * count
        assert candidates
        counts[count] = index.comparisons
    assert counts[2000] <= 32 * 9 * 2 * likeness.NEIGHBOURS * 2000
    assert counts[2000] <= 4.5 * counts[500]


def test_index_finds_every_close_pair_among_random_hashes() -> None:
    rng = random.Random(5)
    hashes = [rng.getrandbits(64) for _ in range(3000)]
    hashes[2999] = hashes[17] ^ (1 << 3) ^ (1 << 40) ^ (1 << 63)
    found = {(c.owner, c.entry) for c in CandidateIndex(_pictures(hashes)).candidates()}
    assert (17, 2999) in found
    assert (2999, 17) in found


@pytest.mark.slow
def test_two_thousand_alike_low_detail_images_cost_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 same-size, nearly flat pictures (a small dot on grey): confirmation calls stay
    within MAX_PARTNERS per image, counted, not timed."""
    count = 2000
    for index in range(count):
        image = Image.new("L", (64, 64), 128)
        x, y = index % 40, (index // 40) % 50
        ImageDraw.Draw(image).rectangle((x, y, x + 9, y + 9), fill=20 + index % 60)
        save(image, tmp_path / f"i{index:04d}.png")
    calls: list[int] = []
    indexes: list[CandidateIndex] = []
    real_confirm, real_index = likeness.confirm, likeness.CandidateIndex

    def counting_confirm(*args: object) -> object:
        calls.append(1)
        return real_confirm(*args)  # type: ignore[arg-type]

    def recording_index(pictures: list[Picture]) -> CandidateIndex:
        indexes.append(real_index(pictures))
        return indexes[-1]

    monkeypatch.setattr(likeness, "confirm", counting_confirm)
    monkeypatch.setattr(likeness, "CandidateIndex", recording_index)
    inspect_dataset(tmp_path)
    (index,) = indexes
    assert len(index.pictures) == count
    assert len(calls) <= MAX_PARTNERS * count
    assert index.comparisons <= 32 * 9 * 2 * likeness.NEIGHBOURS * count


@pytest.mark.parametrize(
    "more",
    ["".join(f"{random.Random(seed).getrandbits(64):016x}" for _ in range(31)) for seed in range(3)]
    + ["", "00000000000000ff" * 2, "ABCDEF0123456789", "0x12345678901234", "123"],
)
def test_the_hashes_read_back_as_written(more: str) -> None:
    expected = tuple(int(more[i : i + 16], 16) for i in range(0, len(more), 16))
    assert likeness._hex_words(more) == expected


def test_a_damaged_hash_fails_as_before() -> None:
    with pytest.raises(ValueError, match="invalid literal for int"):
        likeness._hex_words("zz" * 8)
