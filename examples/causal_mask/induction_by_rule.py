# The lesson's Induction head, built by rule with NumPy: score, mask, softmax.
import numpy as np

words = "the cat chased the dog . the cat chased the".split()
T = len(words)

# Query i scores 5 on key j when the word before j equals word i (unless j comes
# right after i), and 2 on position 0, the head's fallback.
before = np.array([""] + words[:-1])                  # the word before each key
same = before[None, :] == np.array(words)[:, None]    # (T, T): query i, key j
right_after = np.eye(T, k=1, dtype=bool)              # j == i + 1
scores = np.where(same & ~right_after, 5.0, 0.0)
scores[:, 0] = 2.0

# The causal mask: a query never sees a later key.
future = np.triu(np.ones((T, T), dtype=bool), k=1)
scores[future] = -np.inf

# Softmax each row (subtract the row max first so exp cannot overflow).
e = np.exp(scores - scores.max(axis=1, keepdims=True))
weights = e / e.sum(axis=1, keepdims=True)

q = 7
k = int(weights[q].argmax())
print(f"{words[q]} ({q}) looks most at {words[k]} ({k}) with weight {weights[q, k]:.2f}")
print(f"weight on future keys: {weights[future].sum():.1f}")

d_model, n_heads = 768, 12  # GPT-2 small
print(f"GPT-2 small: {n_heads} heads of width {d_model // n_heads}")
