"""A safetensors file as numpy arrays (8 bytes of header length, the JSON header, the raw
tensors): Debian 12 has no python3-safetensors."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def load_file(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out, header.get("__metadata__", {})
