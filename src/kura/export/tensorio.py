"""Read and write whole safetensors files as numpy arrays (bf16/fp8 through ml_dtypes).

The header is read with Kura's strict reader; the writer lays tensors out back to back in
name order with the header padded to 8 bytes, as the reference writer does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.errors import Unsupported

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Tensors", "dtype_name", "read_tensors", "serialize"]

Tensors = dict[str, "np.ndarray"]


def _dtypes() -> dict[str, Any]:
    import ml_dtypes
    import numpy as np

    return {
        "BOOL": np.dtype(np.bool_),
        "U8": np.dtype(np.uint8),
        "I8": np.dtype(np.int8),
        "I16": np.dtype(np.int16),
        "U16": np.dtype(np.uint16),
        "I32": np.dtype(np.int32),
        "U32": np.dtype(np.uint32),
        "I64": np.dtype(np.int64),
        "U64": np.dtype(np.uint64),
        "F16": np.dtype(np.float16),
        "F32": np.dtype(np.float32),
        "F64": np.dtype(np.float64),
        "BF16": np.dtype(ml_dtypes.bfloat16),
        "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
        "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    }


def dtype_name(array: np.ndarray) -> str:
    """The safetensors dtype string of ``array``."""
    for name, dtype in _dtypes().items():
        if array.dtype == dtype:
            return name
    raise Unsupported(f"cannot write numpy dtype {array.dtype} to safetensors")


def read_tensors(path: Path) -> tuple[Tensors, dict[str, str]]:
    """Every tensor of ``path`` (little-endian arrays) and its ``__metadata__``."""
    import numpy as np

    from kura.models.header import read_header

    _require_little_endian()
    header = read_header(path)
    dtypes = _dtypes()
    data = Path(path).read_bytes()[header.data_start :]
    tensors: Tensors = {}
    for name, info in header.tensors.items():
        if info.dtype not in dtypes:
            raise Unsupported(
                f"{path}: tensor {name!r} has dtype {info.dtype}, which export cannot read",
                path=path,
            )
        raw = data[info.start : info.end]
        tensors[name] = np.frombuffer(raw, dtype=dtypes[info.dtype]).copy().reshape(info.shape)
    return tensors, dict(header.metadata)


def serialize(tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str]) -> bytes:
    """The bytes of a safetensors file holding ``tensors`` and string ``metadata``."""
    import numpy as np

    _require_little_endian()
    header: dict[str, Any] = {"__metadata__": {str(k): str(v) for k, v in metadata.items()}}
    chunks: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        array = np.asarray(tensors[name])
        array = array if array.flags.c_contiguous else array.copy(order="C")
        raw = array.tobytes()
        header[name] = {
            "dtype": dtype_name(array),
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    return len(encoded).to_bytes(8, "little") + encoded + b"".join(chunks)


def _require_little_endian() -> None:
    if sys.byteorder != "little":
        raise Unsupported("LoRA export needs a little-endian machine (safetensors byte order)")
