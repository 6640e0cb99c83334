"""AI-Toolkit's own data loader over folders of small images: its buckets and batches.

Run as ``python aitk_buckets_harness.py AITK_SRC CASES.json`` with AI-Toolkit's Python
(one process for every case). For each case it writes the images (Pillow, one colour each,
with a caption file), builds the data loader as a training job does
(``toolkit/data_loader.py::get_dataloader_from_datasets`` over the raw dataset dict, which
``preprocess_dataset_raw_config`` splits by resolution into ``DatasetConfig``s), and reports
per dataset its buckets (``"WxH"`` → files) and batches, and the loader's length.

The model is a stand-in carrying the real class's ``get_bucket_divisibility`` (found by
``toolkit/util/get_model.py::get_model_class``), so the step is the class's own; the stand-in
supplies the few attributes the dataset reads of it (no weights are loaded); any other
attribute it reads is a feature flag answered False, and is listed in the report.

Prints one JSON document: ``{case name: {"divisibility", "datasets": [{"resolution",
"buckets", "batches"}], "loader_batches"}}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

SRC = Path(sys.argv[1]).resolve()
CASES = json.loads(Path(sys.argv[2]).read_text())
sys.path.insert(0, str(SRC))
os.chdir(SRC)

from PIL import Image  # noqa: E402
from toolkit.config_modules import ModelConfig  # noqa: E402
from toolkit.data_loader import get_dataloader_from_datasets  # noqa: E402
from toolkit.util.get_model import get_model_class  # noqa: E402

READ: set[str] = set()
"""Other attributes the dataset read of the stand-in (each answered False)."""


def _stand_in(arch: str) -> Any:
    model_class = get_model_class(ModelConfig(name_or_path="none", arch=arch))
    attributes = {
        "get_bucket_divisibility": model_class.get_bucket_divisibility,
        "model_config": SimpleNamespace(latent_space_version="kura", arch=arch),
        "latent_space_version": "kura",
        # the legacy StableDiffusion class reads the VAE's depth (SDXL: 4 blocks)
        "vae": SimpleNamespace(config={"block_out_channels": [128, 256, 512, 512]}),
        "unet": SimpleNamespace(config=SimpleNamespace()),
        "is_flux": False,
        "is_v3": False,
        "is_xl": arch == "sdxl",
        "encode_control_in_text_embeddings": False,
        "text_embedding_space_version": "kura",
        "te_padding_side": "right",
    }

    def unknown(self: Any, name: str) -> Any:
        if name.startswith(("__", "get_")):
            raise AttributeError(name)  # an optional hook (hasattr): absent
        READ.add(name)
        return False  # a feature flag the dataset checks (control images, audio): off

    attributes["__getattr__"] = unknown
    return type("StandIn", (), attributes)()


def _write_images(folder: Path, sizes: list[list[int]]) -> None:
    folder.mkdir(parents=True)
    index = 0
    for width, height, count in sizes:
        for _ in range(count):
            Image.new("RGB", (width, height), (index % 255, 80, 160)).save(
                folder / f"img{index:04d}.png"
            )
            (folder / f"img{index:04d}.txt").write_text("a photo")
            index += 1


def _run(case: dict[str, Any], root: Path) -> dict[str, Any]:
    folder = root / case["name"]
    _write_images(folder, case["sizes"])
    sd = _stand_in(case["arch"])
    raw = {
        "folder_path": str(folder),
        "caption_ext": "txt",
        "resolution": case["resolution"],
        "num_repeats": case["repeats"],
        "cache_latents_to_disk": False,
    }
    loader = get_dataloader_from_datasets([raw], batch_size=case["batch_size"], sd=sd)
    datasets = []
    for dataset in loader.dataset.datasets:
        datasets.append(
            {
                "resolution": dataset.dataset_config.resolution,
                "buckets": {k: len(b.file_list_idx) for k, b in dataset.buckets.items()},
                "batches": len(dataset),
                "padded": all(len(b) == case["batch_size"] for b in dataset.batch_indices),
            }
        )
    return {
        "divisibility": sd.get_bucket_divisibility(),
        "datasets": datasets,
        "loader_batches": len(loader),
    }


def main() -> None:
    root = Path(CASES["root"])
    report: dict[str, Any] = {case["name"]: _run(case, root) for case in CASES["cases"]}
    report["_stand_in_flags"] = sorted(READ)
    sys.stdout.flush()
    print("KURA-REPORT " + json.dumps(report))


if __name__ == "__main__":
    main()
