// analysis/head_scores.cpp — the pattern measures of head_scores.h and the eigenvalue
// solver behind the copying score.
#include "analysis/head_scores.h"

#include <algorithm>
#include <cmath>

namespace headlab::analysis {
namespace {

// Averages f(q) and 1/(q+1)-weighted chance g(q) over queries q in [q0, q1).
template <class F, class G>
Scored average(int q0, int q1, F score_of, G chance_of) {
  Scored s;
  int n = 0;
  for (int q = q0; q < q1; ++q) {
    s.score += score_of(q);
    s.chance += chance_of(q);
    ++n;
  }
  if (n > 0) {
    s.score /= n;
    s.chance /= n;
  }
  return s;
}

double uniform(int q) { return 1.0 / (q + 1); }

}  // namespace

Scored previous_token_score(PatternView p) {
  return average(2, p.T, [&](int q) { return double(p.at(q, q - 1)); }, uniform);
}

Scored current_token_score(PatternView p) {
  return average(1, p.T, [&](int q) { return double(p.at(q, q)); }, uniform);
}

Scored first_token_score(PatternView p) {
  return average(1, p.T, [&](int q) { return double(p.at(q, 0)); }, uniform);
}

Scored duplicate_token_score(PatternView p, int R) {
  return average(R + 1, std::min(p.T, 2 * R + 1), [&](int q) { return double(p.at(q, q - R)); }, uniform);
}

Scored induction_score(PatternView p, int R) {
  return average(R + 1, std::min(p.T, 2 * R + 1), [&](int q) { return double(p.at(q, q - R + 1)); }, uniform);
}

Scored prefix_matching_score(PatternView p, const std::vector<int>& tokens) {
  Scored s;
  int n = 0;
  for (int q = 1; q < p.T; ++q) {
    double mass = 0.0, chance = 0.0;
    bool has_target = false;
    for (int k = 1; k <= q; ++k)
      if (k - 1 < q && tokens[k - 1] == tokens[q]) {
        mass += p.at(q, k);
        chance += uniform(q);
        has_target = true;
      }
    if (!has_target) continue;  // conditional: only queries whose token occurred before
    s.score += mass;
    s.chance += chance;
    ++n;
  }
  if (n > 0) {
    s.score /= n;
    s.chance /= n;
  }
  return s;
}

Scored entropy_score(PatternView p) {
  return average(
      1, p.T,
      [&](int q) {
        double h = 0.0;
        for (int k = 0; k <= q; ++k) {
          const double a = p.at(q, k);
          if (a > 0.0) h -= a * std::log(a);
        }
        return h / std::log(double(q + 1));
      },
      [](int) { return 1.0; });
}

Scored punctuation_score(PatternView p, const std::vector<bool>& is_punct) {
  return average(
      1, p.T,
      [&](int q) {
        double mass = 0.0;
        for (int k = 0; k <= q; ++k)
          if (is_punct[k]) mass += p.at(q, k);
        return mass;
      },
      [&](int q) {
        int n = 0;
        for (int k = 0; k <= q; ++k) n += is_punct[k] ? 1 : 0;
        return double(n) / (q + 1);
      });
}

double copying_score_from_eigenvalues(const std::vector<double>& re, const std::vector<double>& im) {
  double sum = 0.0, abs_sum = 0.0;
  for (std::size_t i = 0; i < re.size(); ++i) {
    sum += re[i];
    abs_sum += std::hypot(re[i], im[i]);
  }
  return abs_sum > 0.0 ? sum / abs_sum : 0.0;
}

bool eigenvalues(std::vector<double> a, int n, std::vector<double>& wr, std::vector<double>& wi) {
  auto A = [&](int i, int j) -> double& { return a[static_cast<std::size_t>(i) * n + j]; };
  wr.assign(n, 0.0);
  wi.assign(n, 0.0);
  // 1. reduce to upper Hessenberg form by Gaussian elimination with pivoting
  //    (Numerical Recipes' elmhes): a similarity transform, same eigenvalues
  for (int m = 1; m < n - 1; ++m) {
    double x = 0.0;
    int i = m;
    for (int j = m; j < n; ++j)
      if (std::fabs(A(j, m - 1)) > std::fabs(x)) {
        x = A(j, m - 1);
        i = j;
      }
    if (i != m) {
      for (int j = m - 1; j < n; ++j) std::swap(A(i, j), A(m, j));
      for (int j = 0; j < n; ++j) std::swap(A(j, i), A(j, m));
    }
    if (x != 0.0) {
      for (i = m + 1; i < n; ++i) {
        double y = A(i, m - 1);
        if (y != 0.0) {
          y /= x;
          A(i, m - 1) = y;
          for (int j = m; j < n; ++j) A(i, j) -= y * A(m, j);
          for (int j = 0; j < n; ++j) A(j, m) += y * A(j, i);
        }
      }
    }
  }
  for (int i = 2; i < n; ++i)
    for (int j = 0; j < i - 1; ++j) A(i, j) = 0.0;
  // 2. Francis double-shift QR on the Hessenberg matrix (Numerical Recipes' hqr)
  double anorm = 0.0;
  for (int i = 0; i < n; ++i)
    for (int j = std::max(i - 1, 0); j < n; ++j) anorm += std::fabs(A(i, j));
  int nn = n - 1;
  double t = 0.0, p = 0.0, q = 0.0, r = 0.0, s = 0.0, w, x, y, z;
  while (nn >= 0) {
    int its = 0, l;
    do {
      for (l = nn; l >= 1; --l) {
        s = std::fabs(A(l - 1, l - 1)) + std::fabs(A(l, l));
        if (s == 0.0) s = anorm;
        if (std::fabs(A(l, l - 1)) + s == s) {
          A(l, l - 1) = 0.0;
          break;
        }
      }
      x = A(nn, nn);
      if (l == nn) {  // one root found
        wr[nn] = x + t;
        wi[nn--] = 0.0;
      } else {
        y = A(nn - 1, nn - 1);
        w = A(nn, nn - 1) * A(nn - 1, nn);
        if (l == nn - 1) {  // two roots found
          p = 0.5 * (y - x);
          q = p * p + w;
          z = std::sqrt(std::fabs(q));
          x += t;
          if (q >= 0.0) {
            z = p + (p >= 0 ? std::fabs(z) : -std::fabs(z));
            wr[nn - 1] = wr[nn] = x + z;
            if (z != 0.0) wr[nn] = x - w / z;
            wi[nn - 1] = wi[nn] = 0.0;
          } else {
            wr[nn - 1] = wr[nn] = x + p;
            wi[nn - 1] = -(wi[nn] = z);
          }
          nn -= 2;
        } else {  // no root yet: one QR step
          if (its == 60) return false;
          if (its == 10 || its == 20) {  // exceptional shift
            t += x;
            for (int i = 0; i <= nn; ++i) A(i, i) -= x;
            s = std::fabs(A(nn, nn - 1)) + std::fabs(A(nn - 1, nn - 2));
            y = x = 0.75 * s;
            w = -0.4375 * s * s;
          }
          ++its;
          int m;
          for (m = nn - 2; m >= l; --m) {
            z = A(m, m);
            r = x - z;
            s = y - z;
            p = (r * s - w) / A(m + 1, m) + A(m, m + 1);
            q = A(m + 1, m + 1) - z - r - s;
            r = A(m + 2, m + 1);
            s = std::fabs(p) + std::fabs(q) + std::fabs(r);
            p /= s;
            q /= s;
            r /= s;
            if (m == l) break;
            double u = std::fabs(A(m, m - 1)) * (std::fabs(q) + std::fabs(r));
            double v = std::fabs(p) * (std::fabs(A(m - 1, m - 1)) + std::fabs(z) + std::fabs(A(m + 1, m + 1)));
            if (u + v == v) break;
          }
          for (int i = m; i < nn - 1; ++i) {
            A(i + 2, i) = 0.0;
            if (i != m) A(i + 2, i - 1) = 0.0;
          }
          for (int k = m; k < nn; ++k) {
            if (k != m) {
              p = A(k, k - 1);
              q = A(k + 1, k - 1);
              r = 0.0;
              if (k + 1 != nn) r = A(k + 2, k - 1);
              if ((x = std::fabs(p) + std::fabs(q) + std::fabs(r)) != 0.0) {
                p /= x;
                q /= x;
                r /= x;
              }
            }
            double sq = std::sqrt(p * p + q * q + r * r);
            if ((s = (p >= 0 ? sq : -sq)) != 0.0) {
              if (k == m) {
                if (l != m) A(k, k - 1) = -A(k, k - 1);
              } else {
                A(k, k - 1) = -s * x;
              }
              p += s;
              x = p / s;
              y = q / s;
              z = r / s;
              q /= p;
              r /= p;
              for (int j = k; j <= nn; ++j) {
                p = A(k, j) + q * A(k + 1, j);
                if (k + 1 != nn) {
                  p += r * A(k + 2, j);
                  A(k + 2, j) -= p * z;
                }
                A(k + 1, j) -= p * y;
                A(k, j) -= p * x;
              }
              const int mmin = nn < k + 3 ? nn : k + 3;
              for (int i = l; i <= mmin; ++i) {
                p = x * A(i, k) + y * A(i, k + 1);
                if (k + 1 != nn) {
                  p += z * A(i, k + 2);
                  A(i, k + 2) -= p * r;
                }
                A(i, k + 1) -= p * q;
                A(i, k) -= p;
              }
            }
          }
        }
      }
    } while (l < nn - 1);
  }
  return true;
}

}  // namespace headlab::analysis
