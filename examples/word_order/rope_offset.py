# RoPE in NumPy: turn each pair of q and k channels by position x frequency, then check
# that q.k depends only on the offset m - n. The same numbers as rope_offset.cpp.
import numpy as np

HS, theta = 64, 10000.0
i = np.arange(HS // 2)
freq = theta ** (-2 * i / HS)              # (HS/2) radians per token, fast to slow


def rope(x, pos):
    """Rotate the pairs (x[i], x[i + HS/2]) of one vector x (HS) by pos * freq[i]."""
    a, b = x[: HS // 2], x[HS // 2 :]
    c, s = np.cos(pos * freq), np.sin(pos * freq)
    return np.concatenate([a * c - b * s, b * c + a * s])


q = np.sin(0.9 * np.arange(HS) + 0.4)     # the lesson's q and k
k = np.sin(0.9 * np.arange(HS) + 0.1)

for m, n in [(5, 2), (105, 102), (1005, 1002), (9, 3)]:
    print(f"q at {m:4d}, k at {n:4d}, offset {m - n}: q.k = {rope(q, m) @ rope(k, n):.4f}")
print(f"wavelengths: fastest pair {2 * np.pi / freq[0]:.1f} tokens, slowest {2 * np.pi / freq[-1]:.0f} tokens")
