"""What the PyTorch peers in bench/ share: reading model.safetensors tensor by tensor, the token
ids every side is fed, the timed repeats and the result line, with the same fields and the same
definitions as the C programs (bench/bench_clock.h).

    w = read_safetensors(path, torch.float32)          # {name: tensor}
    times, cpu, (logits, patterns) = time_forwards(lambda: model(idx), repeats)
    print(result_line(T, times, cpu, logits[-1], dtype="float32"))
"""
import json
import struct
import time

import numpy as np
import torch

# safetensors dtype -> (numpy dtype of the raw bytes, torch dtype they are)
_RAW = {"F32": (np.float32, torch.float32), "F16": (np.float16, torch.float16), "BF16": (np.int16, torch.bfloat16)}


def read_safetensors(path, dtype=torch.float32, strip_prefix=""):
    """Every tensor of the file as `dtype` (Hugging Face's from_pretrained loads a BF16 file as
    float32 unless told otherwise), read one tensor at a time so that the peak memory is the
    loaded model plus one tensor, not the file again."""
    out = {}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            raw_np, raw_torch = _RAW[meta["dtype"]]
            b, e = meta["data_offsets"]
            f.seek(base + b)
            raw = np.frombuffer(f.read(e - b), dtype=raw_np)
            t = torch.from_numpy(raw.copy()).view(raw_torch).reshape(meta["shape"])
            out[name.removeprefix(strip_prefix)] = t.to(dtype) if t.dtype != dtype else t
    return out


def token_ids(T, V):
    """The ids of bench_token_id (bench/bench_clock.h): the same input on every side."""
    return [(t * 7919 + 13) % V for t in range(T)]


def time_forwards(run, repeats):
    """Calls run() repeats + 1 times (the first warms up and is not counted); returns the
    sorted wall times in ms, the sorted CPU times (every thread's) and the last call's result."""
    times, cpu, out = [], [], None
    with torch.inference_mode():
        for r in range(repeats + 1):
            out = None  # the previous result (and its patterns) is freed before the next run, as in a loop over inputs
            c0, t0 = time.process_time(), time.perf_counter()
            out = run()
            t1, c1 = time.perf_counter(), time.process_time()
            if r > 0:
                times.append((t1 - t0) * 1000)
                cpu.append((c1 - c0) * 1000)
    return sorted(times), sorted(cpu), out


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return -1


def blas_core():
    """The kernels of the OpenBLAS this process loaded (Debian's PyTorch links the same
    libopenblas.so.0 as headlab), or "unknown"."""
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"


def result_line(T, times, cpu, last_logits, dump_last=None, **extra):
    """One line of key=value fields, as the C programs print it. last_logits: (V) of the last position."""
    last = last_logits.float()
    if dump_last:
        last.numpy().astype(np.float32).tofile(dump_last)
    fields = [f"tokens={T}", f"median_ms={times[len(times) // 2]:.1f}", f"min_ms={times[0]:.1f}",
              f"cpu_ms={cpu[len(cpu) // 2]:.1f}", f"peak_rss_mb={peak_rss_mb():.0f}", f"argmax_last={int(last.argmax())}",
              f"logit_sum_last={float(last.double().sum()):.4f}"]
    fields += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(fields + [f"blas={blas_core()}"])
