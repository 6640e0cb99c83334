"""Small builders for dataset-inspection fixtures, generated with Pillow/PyAV in tmp_path."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image


def picture(width: int, height: int, seed: int = 0) -> Image.Image:
    """A picture with coarse random structure (distinct per seed, stable under resizing)."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, size=(6, 6, 3), dtype=np.uint8)
    return Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BICUBIC)


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


class Builder:
    """Writes images, captions and videos into one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def image(
        self,
        name: str,
        size: tuple[int, int] = (64, 48),
        *,
        seed: int = 0,
        caption: str | None = "a caption",
        image: Image.Image | None = None,
        **options: object,
    ) -> Path:
        path = self.root / name
        img = image if image is not None else picture(*size, seed=seed)
        fmt = {"jpg": "JPEG", "jpeg": "JPEG", "png": "PNG", "webp": "WEBP", "bmp": "BMP"}[
            path.suffix.lower().lstrip(".")
        ]
        path.write_bytes(encode(img, fmt, **options))
        if caption is not None:
            self.caption(path.stem, caption)
        return path

    def caption(self, stem: str, text: str | bytes, ext: str = ".txt") -> Path:
        path = self.root / (stem + ext)
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return path

    def raw(self, name: str, data: bytes, caption: str | None = "a caption") -> Path:
        path = self.root / name
        path.write_bytes(data)
        if caption is not None:
            self.caption(path.stem, caption)
        return path

    def video(
        self, name: str, frames: int, *, fps: int = 8, caption: str | None = "a clip"
    ) -> Path:
        import av

        path = self.root / name
        with av.open(str(path), "w") as container:
            stream = container.add_stream("mpeg4", rate=fps)
            stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
            for i in range(frames):
                pixels = np.full((48, 64, 3), (i * 13) % 256, dtype=np.uint8)
                frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        if caption is not None:
            self.caption(path.stem, caption)
        return path
