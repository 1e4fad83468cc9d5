// Op graphs of the GELU variants written as separate tensor ops (NUMERICS.md section 3), forward
// and backward, as the source writes them. Every op goes through the op set (gelu_ops.h), which
// decides how it is computed and rounded; this file only fixes which ops run, on what, in what
// order. The backward is the graph autograd builds: each node's gradient formula from
// tools/autograd/derivatives.yaml as tensor ops, and the gradients reaching x summed in the order
// autograd's engine delivers them (nodes run latest-created first; x's buffer adds each arrival).
#include <stdlib.h>

#include "kernels/gelu/gelu_ops.h"

enum { GRAPH_BUFFERS = 16 };

size_t gm_gelu_ops_scratch_len(size_t n) { return (size_t)GRAPH_BUFFERS * n; }

bool gm_gelu_ops_has_graph(gm_gelu_variant v) {
  return v == GM_GELU_PYTHON || v == GM_GELU_NEW || v == GM_GELU_ACCURATE || v == GM_GELU_FAST ||
         v == GM_GELU_MEGATRON || v == GM_OPENAI_GELU || v == GM_QUICK_GELU;
}

// Python float literals, as the sources spell them.
static const double kSqrt2OverPi = 0.7978845608028654;  // math.sqrt(2.0 / math.pi)
static const double kSqrt2 = 1.4142135623730951;        // math.sqrt(2.0)
static const double kTwoOverSqrtPi = 1.1283791670955126; // C++ 2.0 / sqrt(M_PI) in erf's backward

// The tanh-of-polynomial form with the cube written as a pow:
//   gelu_new:      0.5 * x * (1.0 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3.0))))
//   gelu_accurate: 0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3))))     (same ops)
// Temporaries: a = 0.5*x, p = pow(x,3), q = k*p, b = x+q, u = c*b, t = tanh(u), d = 1+t, y = a*d.
static void pow_form_fwd(const gelu_op_set *o, size_t off, size_t n, const double *x, double *y,
                         double *s) {
  double *a = s, *p = s + n, *q = s + 2 * n, *b = s + 3 * n, *u = s + 4 * n, *t = s + 5 * n,
         *d = s + 6 * n;
  o->mul_scalar(o, off, n, x, 0.5, a);
  o->pow_scalar(o, off, n, x, 3.0, p);
  o->mul_scalar(o, off, n, p, 0.044715, q);
  o->add(o, off, n, x, q, b);
  o->mul_scalar(o, off, n, b, kSqrt2OverPi, u);
  o->tanh(o, off, n, u, t);
  o->add_scalar(o, off, n, t, 1.0, d);
  o->mul(o, off, n, a, d, y);
}

static void pow_form_bwd(const gelu_op_set *o, size_t off, size_t n, const double *x,
                         const double *dy, double *dx, double *s) {
  pow_form_fwd(o, off, n, x, s + 15 * n, s); // recompute the saved tensors a, p, ..., d
  const double *a = s, *t = s + 5 * n, *d = s + 6 * n;
  double *ga = s + 7 * n, *gd = s + 8 * n, *gu = s + 9 * n, *gb = s + 10 * n, *gp = s + 11 * n,
         *w = s + 12 * n, *g2 = s + 13 * n, *g3 = s + 14 * n;
  o->mul(o, off, n, dy, d, ga);                    // y = a*d: grad a
  o->mul(o, off, n, dy, a, gd);                    //          grad d (= grad t through 1+t)
  o->tanh_backward(o, off, n, gd, t, gu);          // t = tanh(u)
  o->mul_scalar(o, off, n, gu, kSqrt2OverPi, gb);  // u = c*b; gb reaches x (b = x + q) first
  o->mul_scalar(o, off, n, gb, 0.044715, gp);      // q = k*p
  o->pow_scalar(o, off, n, x, 2.0, w);             // pow_backward: grad * (3.0 * x.pow(2.0))
  o->mul_scalar(o, off, n, w, 3.0, w);
  o->mul(o, off, n, gp, w, g2);
  o->mul_scalar(o, off, n, ga, 0.5, g3);           // a = 0.5*x, the last to arrive
  o->add(o, off, n, gb, g2, dx);
  o->add(o, off, n, dx, g3, dx);
}

// The tanh-of-product form: 0.5 * x * (1.0 + tanh(C * x * (1.0 + 0.044715 * x * x)))
//   gelu_fast:   x * 0.7978845608 (x first),   openai_gelu: 0.7978845608028654 * x,
//   gelu_megatron (forward): x * 0.5 * (1.0 + tanh(0.79788456 * x * (1 + 0.044715 * x * x))).
// Temporaries: a = 0.5*x, m = C*x, k1 = 0.044715*x, k2 = k1*x, e = 1+k2, f = m*e, t = tanh(f),
// d = 1+t, y = a*d.
static void product_form_fwd(const gelu_op_set *o, double c, size_t off, size_t n, const double *x,
                             double *y, double *s) {
  double *a = s, *m = s + n, *k1 = s + 2 * n, *k2 = s + 3 * n, *e = s + 4 * n, *f = s + 5 * n,
         *t = s + 6 * n, *d = s + 7 * n;
  o->mul_scalar(o, off, n, x, 0.5, a);
  o->mul_scalar(o, off, n, x, c, m);
  o->mul_scalar(o, off, n, x, 0.044715, k1);
  o->mul(o, off, n, k1, x, k2);
  o->add_scalar(o, off, n, k2, 1.0, e);
  o->mul(o, off, n, m, e, f);
  o->tanh(o, off, n, f, t);
  o->add_scalar(o, off, n, t, 1.0, d);
  o->mul(o, off, n, a, d, y);
}

static void product_form_bwd(const gelu_op_set *o, double c, size_t off, size_t n, const double *x,
                             const double *dy, double *dx, double *s) {
  product_form_fwd(o, c, off, n, x, s + 15 * n, s);
  const double *a = s, *m = s + n, *k1 = s + 2 * n, *e = s + 4 * n, *t = s + 6 * n,
               *d = s + 7 * n;
  double *ga = s + 8 * n, *gd = s + 9 * n, *gf = s + 10 * n, *gm = s + 11 * n, *ge = s + 12 * n,
         *gk1 = s + 13 * n, *g = s + 14 * n;
  o->mul(o, off, n, dy, d, ga);           // y = a*d
  o->mul(o, off, n, dy, a, gd);
  o->tanh_backward(o, off, n, gd, t, gf); // t = tanh(f)
  o->mul(o, off, n, gf, e, gm);           // f = m*e
  o->mul(o, off, n, gf, m, ge);           // ge = grad k2 (e = 1 + k2)
  o->mul(o, off, n, ge, x, gk1);          // k2 = k1*x: grad k1, and grad x arrives first
  o->mul(o, off, n, ge, k1, dx);
  o->mul_scalar(o, off, n, gk1, 0.044715, g); // k1 = 0.044715*x
  o->add(o, off, n, dx, g, dx);
  o->mul_scalar(o, off, n, gm, c, g);     // m = C*x
  o->add(o, off, n, dx, g, dx);
  o->mul_scalar(o, off, n, ga, 0.5, g);   // a = 0.5*x
  o->add(o, off, n, dx, g, dx);
}

// Megatron's bias_gelu with bias = 0: x = bias + y is an add of a zero tensor (so -0 becomes +0).
static void megatron_input(const gelu_op_set *o, size_t off, size_t n, const double *y, double *x,
                           double *zero) {
  for (size_t i = 0; i < n; i++) zero[i] = 0.0;
  o->add(o, off, n, zero, y, x);
}

// Megatron's bias_gelu_back (custom, not autograd), bias = 0:
//   t = tanh(0.79788456 * x * (1 + 0.044715 * x * x))
//   ff = 0.5 * x * ((1 - t * t) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + t);  dx = ff * g
static void megatron_bwd(const gelu_op_set *o, size_t off, size_t n, const double *y,
                         const double *dy, double *dx, double *s) {
  double *x = s + 15 * n;
  megatron_input(o, off, n, y, x, s);
  double *m = s, *k1 = s + n, *k2 = s + 2 * n, *e = s + 3 * n, *f = s + 4 * n, *t = s + 5 * n,
         *h = s + 6 * n, *tt = s + 7 * n, *q = s + 8 * n, *r1 = s + 9 * n, *r2 = s + 10 * n,
         *u = s + 11 * n, *w = s + 12 * n, *hw = s + 13 * n, *m1 = s + 14 * n;
  o->mul_scalar(o, off, n, x, 0.79788456, m);
  o->mul_scalar(o, off, n, x, 0.044715, k1);
  o->mul(o, off, n, k1, x, k2);
  o->add_scalar(o, off, n, k2, 1.0, e);
  o->mul(o, off, n, m, e, f);
  o->tanh(o, off, n, f, t);
  o->mul_scalar(o, off, n, x, 0.5, h);
  o->mul(o, off, n, t, t, tt);
  o->rsub_scalar(o, off, n, tt, 1.0, q);
  o->mul_scalar(o, off, n, x, 0.1070322243, r1);
  o->mul(o, off, n, r1, x, r2);
  o->add_scalar(o, off, n, r2, 0.79788456, u);
  o->mul(o, off, n, q, u, w);
  o->mul(o, off, n, h, w, hw);
  o->add_scalar(o, off, n, t, 1.0, m1);
  o->mul_scalar(o, off, n, m1, 0.5, m1);
  o->add(o, off, n, hw, m1, m1);
  o->mul(o, off, n, m1, dy, dx);
}

// gelu_python: x * 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
// Temporaries: a = x*0.5, v = x/sqrt2, r = erf(v), d = 1+r, y = a*d.
static void python_fwd(const gelu_op_set *o, size_t off, size_t n, const double *x, double *y,
                       double *s) {
  double *a = s, *v = s + n, *r = s + 2 * n, *d = s + 3 * n;
  o->mul_scalar(o, off, n, x, 0.5, a);
  o->div_scalar(o, off, n, x, kSqrt2, v);
  o->erf(o, off, n, v, r);
  o->add_scalar(o, off, n, r, 1.0, d);
  o->mul(o, off, n, a, d, y);
}

static void python_bwd(const gelu_op_set *o, size_t off, size_t n, const double *x,
                       const double *dy, double *dx, double *s) {
  python_fwd(o, off, n, x, s + 15 * n, s);
  const double *a = s, *v = s + n, *d = s + 3 * n;
  double *ga = s + 4 * n, *gd = s + 5 * n, *p = s + 6 * n, *e = s + 7 * n, *gv = s + 8 * n,
         *g = s + 9 * n;
  o->mul(o, off, n, dy, d, ga);
  o->mul(o, off, n, dy, a, gd);
  // erf backward: 2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad
  o->pow_scalar(o, off, n, v, 2.0, p);
  o->neg(o, off, n, p, p);
  o->exp(o, off, n, p, e);
  o->mul_scalar(o, off, n, e, kTwoOverSqrtPi, e);
  o->mul(o, off, n, e, gd, gv);
  o->div_scalar(o, off, n, gv, kSqrt2, dx); // v = x / sqrt2: grad / sqrt2 arrives first
  o->mul_scalar(o, off, n, ga, 0.5, g);     // a = x*0.5
  o->add(o, off, n, dx, g, dx);
}

// quick_gelu: x * sigmoid(1.702 * x).  a = 1.702*x, sg = sigmoid(a), y = x*sg.
static void quick_fwd(const gelu_op_set *o, size_t off, size_t n, const double *x, double *y,
                      double *s) {
  double *a = s, *sg = s + n;
  o->mul_scalar(o, off, n, x, 1.702, a);
  o->sigmoid(o, off, n, a, sg);
  o->mul(o, off, n, x, sg, y);
}

static void quick_bwd(const gelu_op_set *o, size_t off, size_t n, const double *x,
                      const double *dy, double *dx, double *s) {
  quick_fwd(o, off, n, x, s + 15 * n, s);
  const double *sg = s + n;
  double *gs = s + 2 * n, *ga = s + 3 * n, *g = s + 4 * n;
  o->mul(o, off, n, dy, sg, dx);  // y = x*sg: grad x arrives first
  o->mul(o, off, n, dy, x, gs);
  o->sigmoid_backward(o, off, n, gs, sg, ga);
  o->mul_scalar(o, off, n, ga, 1.702, g);
  o->add(o, off, n, dx, g, dx);
}

void gm_gelu_ops_graph_fwd(gm_gelu_variant v, const gelu_op_set *o, size_t off, size_t n,
                        const double *x, double *y, double *scratch) {
  switch (v) {
  case GM_GELU_NEW:
  case GM_GELU_ACCURATE: pow_form_fwd(o, off, n, x, y, scratch); break;
  case GM_GELU_FAST: product_form_fwd(o, 0.7978845608, off, n, x, y, scratch); break;
  case GM_OPENAI_GELU: product_form_fwd(o, kSqrt2OverPi, off, n, x, y, scratch); break;
  case GM_GELU_MEGATRON: {
    double *xb = scratch + 15 * n;
    megatron_input(o, off, n, x, xb, scratch);
    product_form_fwd(o, 0.79788456, off, n, xb, y, scratch);
    break;
  }
  case GM_GELU_PYTHON: python_fwd(o, off, n, x, y, scratch); break;
  case GM_QUICK_GELU: quick_fwd(o, off, n, x, y, scratch); break;
  default: break; // not a graph variant; callers check gm_gelu_ops_has_graph
  }
}

void gm_gelu_ops_graph_bwd(gm_gelu_variant v, const gelu_op_set *o, size_t off, size_t n,
                        const double *x, const double *dy, double *dx, double *scratch) {
  switch (v) {
  case GM_GELU_NEW:
  case GM_GELU_ACCURATE: pow_form_bwd(o, off, n, x, dy, dx, scratch); break;
  case GM_GELU_FAST: product_form_bwd(o, 0.7978845608, off, n, x, dy, dx, scratch); break;
  case GM_OPENAI_GELU: product_form_bwd(o, kSqrt2OverPi, off, n, x, dy, dx, scratch); break;
  case GM_GELU_MEGATRON: megatron_bwd(o, off, n, x, dy, dx, scratch); break;
  case GM_GELU_PYTHON: python_bwd(o, off, n, x, dy, dx, scratch); break;
  case GM_QUICK_GELU: quick_bwd(o, off, n, x, dy, dx, scratch); break;
  default: break;
  }
}
