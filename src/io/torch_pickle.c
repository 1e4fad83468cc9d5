// An inert pickle VM: exactly the opcodes PyTorch's weights_only=True unpickler accepts
// (torch/_weights_only_unpickler.py), and the part of its global allow-list that describes
// tensors. Nothing is called: REDUCE on an allowed callable builds a value (a tensor
// description, an empty OrderedDict, a tuple). Every refusal is one line naming the opcode or
// global and the byte offset.
#include "torch_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const gm_torch_dtype gm_torch_dtypes[] = {
    {"float32", "FloatStorage", 4, GM_F32},         {"float16", "HalfStorage", 2, GM_F16},
    {"bfloat16", "BFloat16Storage", 2, GM_BF16},    {"float64", "DoubleStorage", 8, -1},
    {"int64", "LongStorage", 8, -1},                {"int32", "IntStorage", 4, -1},
    {"int16", "ShortStorage", 2, -1},               {"int8", "CharStorage", 1, -1},
    {"uint8", "ByteStorage", 1, -1},                {"bool", "BoolStorage", 1, -1},
    {"complex64", "ComplexFloatStorage", 8, -1},    {"complex128", "ComplexDoubleStorage", 16, -1},
};
const int gm_torch_n_dtypes = (int)(sizeof gm_torch_dtypes / sizeof gm_torch_dtypes[0]);

// Globals in PyTorch's allow-list that gptmeg does not represent: refused with their own line.
static const char *const torch_only[] = {
    "collections.Counter", "torch.nn.parameter.Parameter", "torch.serialization._get_layout", "torch.Tensor",
    "torch.device", "_codecs.encode", "builtins.bytearray", "builtins.set", "builtins.complex",
    "torch._utils._rebuild_qtensor", "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._utils._rebuild_wrapper_subclass", "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor", "torch._tensor._rebuild_from_type_v2",
    "torch.per_tensor_affine", "torch.per_tensor_symmetric", "torch.per_channel_affine", "torch.per_channel_symmetric",
    "torch.per_channel_affine_float_qparams", "torch.storage.TypedStorage", "torch.storage.UntypedStorage"};

enum {
  OP_MARK = '(', OP_STOP = '.', OP_BININT = 'J', OP_BININT1 = 'K', OP_BININT2 = 'M', OP_NONE = 'N',
  OP_BINPERSID = 'Q', OP_REDUCE = 'R', OP_SHORT_BINSTRING = 'U', OP_BINUNICODE = 'X', OP_APPEND = 'a',
  OP_BUILD = 'b', OP_GLOBAL = 'c', OP_EMPTY_DICT = '}', OP_APPENDS = 'e', OP_BINGET = 'h', OP_LONG_BINGET = 'j',
  OP_EMPTY_LIST = ']', OP_BINPUT = 'q', OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't', OP_EMPTY_TUPLE = ')',
  OP_SETITEMS = 'u', OP_BINFLOAT = 'G', OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86,
  OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_EMPTY_SET = 0x8f,
};

static const char *kind_name(gm_pk_kind k) {
  static const char *const n[] = {"None", "bool", "int", "int", "float", "str", "tuple", "list", "dict", "set",
                                  "global", "storage", "tensor", "argparse.Namespace",
                                  "skipped NumPy value"};
  return n[k];
}

void gm_pkvm_free(gm_pkvm *vm) {
  for (size_t i = 0; i < vm->n_all; i++) { free(vm->all[i]->items); free(vm->all[i]); }
  free(vm->all);
  memset(vm, 0, sizeof *vm);
}

typedef struct {
  gm_pkvm *vm;
  const char *where;
  const unsigned char *b;
  size_t len, pos, op_at, base;
  bool legacy;
  gm_pk **stack;
  size_t sp, cap;
  size_t marks[GM_PKL_MAX_MARKS];
  int n_marks;
  gm_pk **memo;
  size_t memo_n;
} vmst;

#define FAIL(st, ...) vm_fail(st, __VA_ARGS__)
static int vm_fail(vmst *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vm_fail(vmst *st, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gm_fail("%s: pickle byte %zu: %s", st->where, st->base + st->op_at, msg);
}

static gm_pk *mk(vmst *st, gm_pk_kind k) {
  gm_pkvm *vm = st->vm;
  if (vm->budget == 0) { vm_fail(st, "more values than the pickle's size justifies"); return NULL; }
  if (vm->n_all == vm->cap_all) {
    size_t nc = vm->cap_all ? vm->cap_all * 2 : 64;
    gm_pk **na = realloc(vm->all, nc * sizeof *na);
    if (!na) { vm_fail(st, "out of memory"); return NULL; }
    vm->all = na;
    vm->cap_all = nc;
  }
  gm_pk *v = calloc(1, sizeof *v);
  if (!v) { vm_fail(st, "out of memory"); return NULL; }
  vm->budget--;
  vm->all[vm->n_all++] = v;
  v->kind = k;
  v->at = st->base + st->op_at;
  return v;
}

// Appends x to container c's items (pairs for dicts count 2 slots per n).
static int add_item(vmst *st, gm_pk *c, gm_pk *x) {
  bool pairs = c->kind == PK_DICT || c->kind == PK_NAMESPACE;
  size_t need = pairs ? 2 * c->n + 2 : c->n + 1;
  if (need > c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 4;
    while (nc < need) nc *= 2;
    gm_pk **ni = realloc(c->items, nc * sizeof *ni);
    if (!ni) return vm_fail(st, "out of memory");
    c->items = ni;
    c->cap = nc;
  }
  if (pairs) c->items[2 * c->n] = x; // caller adds the value with add_value
  else c->items[c->n++] = x;
  if (x->depth + 1 > c->depth) c->depth = x->depth + 1;
  if (c->depth > GM_PKL_MAX_DEPTH) return vm_fail(st, "nesting deeper than %d", GM_PKL_MAX_DEPTH);
  return 0;
}

static bool str_eq(const gm_pk *v, const char *s) {
  return v->kind == PK_STR && v->slen == strlen(s) && memcmp(v->s, s, v->slen) == 0;
}

static int dict_set(vmst *st, gm_pk *d, gm_pk *k, gm_pk *v) {
  if (k->kind != PK_STR && k->kind != PK_INT && k->kind != PK_BOOL && k->kind != PK_NONE)
    return vm_fail(st, "a dict key of type %s (gptmeg reads str and int keys)", kind_name(k->kind));
  for (size_t i = 0; i < d->n; i++) { // replace an equal key, as Python does
    gm_pk *o = d->items[2 * i];
    bool eq = o->kind == k->kind && (k->kind == PK_STR ? o->slen == k->slen && memcmp(o->s, k->s, k->slen) == 0 : o->i == k->i);
    if (eq) { d->items[2 * i + 1] = v; return 0; }
  }
  if (add_item(st, d, k)) return -1;
  d->items[2 * d->n + 1] = v;
  d->n++;
  if (v->depth + 1 > d->depth) d->depth = v->depth + 1;
  if (d->depth > GM_PKL_MAX_DEPTH) return vm_fail(st, "nesting deeper than %d", GM_PKL_MAX_DEPTH);
  return 0;
}

static int push(vmst *st, gm_pk *v) {
  if (!v) return -1;
  if (st->sp == st->cap) {
    size_t nc = st->cap ? st->cap * 2 : 64;
    gm_pk **ns = realloc(st->stack, nc * sizeof *ns);
    if (!ns) return vm_fail(st, "out of memory");
    st->stack = ns;
    st->cap = nc;
  }
  st->stack[st->sp++] = v;
  return 0;
}

static size_t floor_sp(const vmst *st) { return st->n_marks ? st->marks[st->n_marks - 1] : 0; }

static gm_pk *pop(vmst *st, const char *op) {
  if (st->sp <= floor_sp(st)) { vm_fail(st, "%s on an empty stack (stack underflow)", op); return NULL; }
  return st->stack[--st->sp];
}

static gm_pk *top(vmst *st, const char *op) {
  if (st->sp <= floor_sp(st)) { vm_fail(st, "%s on an empty stack (stack underflow)", op); return NULL; }
  return st->stack[st->sp - 1];
}

// Pops back to the last MARK; *first: index of the first item above it.
static int pop_mark(vmst *st, const char *op, size_t *first) {
  if (st->n_marks == 0) return vm_fail(st, "%s without a MARK (MARK underflow)", op);
  *first = st->marks[--st->n_marks];
  return 0;
}

static int need(vmst *st, size_t n, const char *op) {
  if (st->len - st->pos < n) return vm_fail(st, "%s needs %zu bytes, %zu left: truncated", op, n, st->len - st->pos);
  return 0;
}

static uint64_t rd_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

// A tuple of the n stack items from index first. An index, not a pointer: an empty tuple before
// anything was pushed has a NULL stack, and NULL + 0 is undefined (fuzz_pickle found it).
static gm_pk *mk_tuple(vmst *st, size_t first, size_t n) {
  gm_pk *t = mk(st, PK_TUPLE);
  if (!t) return NULL;
  for (size_t i = 0; i < n; i++)
    if (add_item(st, t, st->stack[first + i])) return NULL;
  return t;
}

// Reads "text\n" at pos into (*s, *n) (at most 256 bytes).
static int read_line(vmst *st, const char **s, size_t *n) {
  size_t i = st->pos;
  while (i < st->len && i - st->pos < 256 && st->b[i] != '\n') i++;
  if (i >= st->len || st->b[i] != '\n') return vm_fail(st, "GLOBAL name is not a newline-terminated line of at most 256 bytes");
  *s = (const char *)st->b + st->pos;
  *n = i - st->pos;
  st->pos = i + 1;
  return 0;
}

static gm_pk *global(vmst *st) {
  const char *m, *nm;
  size_t ml, nl;
  if (read_line(st, &m, &ml) || read_line(st, &nm, &nl)) return NULL;
  char full[520];
  // Python 2 names a protocol-2 pickle may carry (_compat_pickle): __builtin__ -> builtins, copy_reg -> copyreg.
  if (ml == 11 && memcmp(m, "__builtin__", 11) == 0) { m = "builtins"; ml = 8; }
  else if (ml == 8 && memcmp(m, "copy_reg", 8) == 0) { m = "copyreg"; ml = 7; }
  snprintf(full, sizeof full, "%.*s.%.*s", (int)ml, m, (int)nl, nm);
  for (size_t i = 0; full[i]; i++)
    if ((unsigned char)full[i] < 0x20 || (unsigned char)full[i] >= 0x7f) full[i] = '?';
  gm_pk *g = mk(st, PK_GLOBAL);
  if (!g) return NULL;
  g->dt = -1;
  static const struct { const char *name; gm_pk_global g; } fixed[] = {
      {"collections.OrderedDict", G_ORDERED_DICT}, {"torch._utils._rebuild_tensor", G_REBUILD_TENSOR},
      {"torch._utils._rebuild_tensor_v2", G_REBUILD_V2}, {"torch._utils._rebuild_tensor_v3", G_REBUILD_V3},
      {"torch._utils._rebuild_parameter", G_REBUILD_PARAM},
      {"torch._utils._rebuild_parameter_with_state", G_REBUILD_PARAM_STATE}, {"torch.Size", G_SIZE},
      {"torch.UntypedStorage", G_UNTYPED_STORAGE}};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (strcmp(full, fixed[i].name) == 0) { g->glob = (int)fixed[i].g; return g; }
  if (strncmp(full, "torch.", 6) == 0)
    for (int d = 0; d < gm_torch_n_dtypes; d++) {
      if (strcmp(full + 6, gm_torch_dtypes[d].storage) == 0) { g->glob = G_STORAGE; g->dt = d; return g; }
      if (strcmp(full + 6, gm_torch_dtypes[d].dtype) == 0) { g->glob = G_DTYPE; g->dt = d; return g; }
    }
  if (st->vm->megatron) { // Megatron's args and RNG state: described or skipped, never called
    static const char *const skip[] = {"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
                                       "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray.scalar",
                                       "numpy._core.multiarray.scalar", "_codecs.encode",
                                       "builtins.set"}; // DeepSpeed's sparse_tensor_module_names
    if (strcmp(full, "argparse.Namespace") == 0) { g->glob = G_NAMESPACE; return g; }
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
      if (strcmp(full, skip[i]) == 0) { g->glob = G_SKIP; return g; }
  } else if (strcmp(full, "argparse.Namespace") == 0) {
    vm_fail(st, "GLOBAL argparse.Namespace is read only inside a Megatron checkpoint (its args)");
    return NULL;
  }
  for (size_t i = 0; i < sizeof torch_only / sizeof torch_only[0]; i++)
    if (strcmp(full, torch_only[i]) == 0) {
      if (strcmp(full, "torch.storage.UntypedStorage") == 0) { g->glob = G_UNTYPED_STORAGE; return g; }
      vm_fail(st, "GLOBAL %s is allowed by PyTorch's weights_only unpickler but not read by gptmeg", full);
      return NULL;
    }
  vm_fail(st, "GLOBAL %s is not an allowed global (PyTorch's weights_only allow-list)", full);
  return NULL;
}

static bool is_int_tuple(const gm_pk *v, int max_n) {
  if (v->kind != PK_TUPLE || v->n > (size_t)max_n) return false;
  for (size_t i = 0; i < v->n; i++)
    if (v->items[i]->kind != PK_INT) return false;
  return true;
}

// _rebuild_tensor(storage, offset, size, stride) and the leading arguments of _v2 / _v3.
static gm_pk *rebuild_tensor(vmst *st, gm_pk *args, const char *fn, size_t min_n, size_t max_n) {
  if (args->n < min_n || args->n > max_n)
    { vm_fail(st, "REDUCE %s with %zu arguments (expects %zu to %zu)", fn, args->n, min_n, max_n); return NULL; }
  gm_pk *s = args->items[0], *off = args->items[1], *size = args->items[2], *stride = args->items[3];
  if (s->kind != PK_STORAGE) { vm_fail(st, "REDUCE %s: argument 1 is a %s, not a storage", fn, kind_name(s->kind)); return NULL; }
  if (off->kind != PK_INT || off->i < 0) { vm_fail(st, "REDUCE %s: storage offset is not a non-negative int", fn); return NULL; }
  if (!is_int_tuple(size, GM_ST_MAX_DIMS) || !is_int_tuple(stride, GM_ST_MAX_DIMS) || size->n != stride->n)
    { vm_fail(st, "REDUCE %s: size and stride are not int tuples of one length <= %d", fn, GM_ST_MAX_DIMS); return NULL; }
  gm_pk *t = mk(st, PK_TENSOR);
  if (!t) return NULL;
  t->storage = s;
  t->i = off->i;
  t->ndim = (int)size->n;
  t->dt = s->dt;
  for (int d = 0; d < t->ndim; d++) {
    t->size[d] = size->items[d]->i;
    t->stride[d] = stride->items[d]->i;
    if (t->size[d] < 0 || t->stride[d] < 0) { vm_fail(st, "REDUCE %s: negative size or stride in dim %d", fn, d); return NULL; }
  }
  t->depth = 1;
  return t;
}

static gm_pk *reduce(vmst *st, gm_pk *fn, gm_pk *args) {
  if (fn->kind != PK_GLOBAL) { vm_fail(st, "REDUCE on a %s, not an allowed callable", kind_name(fn->kind)); return NULL; }
  if (args->kind != PK_TUPLE) { vm_fail(st, "REDUCE arguments are a %s, not a tuple", kind_name(args->kind)); return NULL; }
  switch ((gm_pk_global)fn->glob) {
  case G_ORDERED_DICT:
    if (args->n != 0) { vm_fail(st, "REDUCE collections.OrderedDict with arguments (gptmeg reads OrderedDict() only)"); return NULL; }
    return mk(st, PK_DICT);
  case G_REBUILD_TENSOR: return rebuild_tensor(st, args, "torch._utils._rebuild_tensor", 4, 4);
  case G_REBUILD_V2: return rebuild_tensor(st, args, "torch._utils._rebuild_tensor_v2", 6, 7);
  case G_REBUILD_V3: {
    gm_pk *t = rebuild_tensor(st, args, "torch._utils._rebuild_tensor_v3", 7, 8);
    if (!t) return NULL;
    gm_pk *d = args->items[6];
    if (d->kind != PK_GLOBAL || d->glob != G_DTYPE) { vm_fail(st, "REDUCE torch._utils._rebuild_tensor_v3: argument 7 is not a torch dtype"); return NULL; }
    t->dt = d->dt;
    return t;
  }
  case G_REBUILD_PARAM:
  case G_REBUILD_PARAM_STATE: {
    size_t want = fn->glob == G_REBUILD_PARAM ? 3 : 4;
    if (args->n != want || args->items[0]->kind != PK_TENSOR)
      { vm_fail(st, "REDUCE torch._utils._rebuild_parameter%s: expects (tensor, ...) of %zu arguments",
                fn->glob == G_REBUILD_PARAM ? "" : "_with_state", want); return NULL; }
    return args->items[0]; // a Parameter is its tensor here
  }
  case G_SKIP: return mk(st, PK_SKIPPED); // NumPy RNG state: nothing built, nothing called
  case G_SIZE:
    if (args->n != 1 || !is_int_tuple(args->items[0], GM_ST_MAX_DIMS))
      { vm_fail(st, "REDUCE torch.Size: expects one int tuple of at most %d", GM_ST_MAX_DIMS); return NULL; }
    return args->items[0];
  default:
    vm_fail(st, "REDUCE on %s is not allowed (not a callable PyTorch's weights_only unpickler calls)",
            fn->glob == G_DTYPE ? "a torch dtype" : "a storage type");
    return NULL;
  }
}

// persistent_load: ('storage', storage_type, key, location, numel) [+ view_metadata in legacy files].
static gm_pk *persid(vmst *st, gm_pk *pid) {
  size_t want = st->legacy ? 6 : 5;
  if (pid->kind != PK_TUPLE || pid->n != want || !str_eq(pid->items[0], "storage"))
    { vm_fail(st, "BINPERSID: the persistent id is not a ('storage', ...) %zu-tuple", want); return NULL; }
  gm_pk *ty = pid->items[1], *key = pid->items[2], *loc = pid->items[3], *n = pid->items[4];
  if (ty->kind != PK_GLOBAL || (ty->glob != G_STORAGE && ty->glob != G_UNTYPED_STORAGE))
    { vm_fail(st, "BINPERSID: storage type is not a torch storage class"); return NULL; }
  if (key->kind != PK_STR || key->slen == 0 || key->slen > 64) { vm_fail(st, "BINPERSID: storage key is not a short str"); return NULL; }
  for (size_t i = 0; i < key->slen; i++)
    if (key->s[i] == '/' || (unsigned char)key->s[i] < 0x20 || (unsigned char)key->s[i] >= 0x7f)
      { vm_fail(st, "BINPERSID: storage key has a '/' or a control byte"); return NULL; }
  if (loc->kind != PK_STR || loc->slen > 64) { vm_fail(st, "BINPERSID: location is not a short str"); return NULL; }
  if (n->kind != PK_INT || n->i < 0) { vm_fail(st, "BINPERSID: storage size is not a non-negative int"); return NULL; }
  if (st->legacy && pid->items[5]->kind != PK_NONE) { vm_fail(st, "BINPERSID: legacy storage views (view_metadata) are not read by gptmeg"); return NULL; }
  gm_pk *s = mk(st, PK_STORAGE);
  if (!s) return NULL;
  s->dt = ty->glob == G_STORAGE ? ty->dt : -1;
  s->key = key->s;
  s->key_len = key->slen;
  s->loc = loc->s;
  s->loc_len = loc->slen;
  s->numel = n->i;
  return s;
}

int gm_pk_run(gm_pkvm *vm, const char *where, const unsigned char *buf, size_t len, size_t start, size_t base,
              bool legacy, size_t *end, gm_pk **out) {
  vmst st = {.vm = vm, .where = where, .b = buf, .len = len, .pos = start, .base = base, .legacy = legacy};
  vm->budget += 2 * (len - start) + 16; // one opcode byte makes at most one value (+ the tuples REDUCE needs)
  int rc = 0;
  *out = NULL;
  for (;;) {
    st.op_at = st.pos;
    if (st.pos >= st.len) { rc = FAIL(&st, "the pickle ends without STOP: truncated"); break; }
    unsigned op = st.b[st.pos++];
    gm_pk *a, *b, *c, *v;
    size_t first = 0;
    switch (op) {
    case OP_PROTO:
      if ((rc = need(&st, 1, "PROTO"))) break;
      if (st.b[st.pos] > 5) rc = FAIL(&st, "PROTO %u (pickle protocols go to 5)", st.b[st.pos]);
      st.pos++;
      break;
    case OP_STOP:
      if (!(a = pop(&st, "STOP"))) { rc = -1; break; }
      *out = a;
      *end = st.pos;
      free(st.stack);
      free(st.memo);
      return 0;
    case OP_MARK:
      if (st.n_marks == GM_PKL_MAX_MARKS) { rc = FAIL(&st, "MARK nested deeper than %d", GM_PKL_MAX_MARKS); break; }
      st.marks[st.n_marks++] = st.sp;
      break;
    case OP_NONE: rc = push(&st, mk(&st, PK_NONE)); break;
    case OP_NEWTRUE:
    case OP_NEWFALSE:
      if (!(v = mk(&st, PK_BOOL))) { rc = -1; break; }
      v->i = op == OP_NEWTRUE;
      rc = push(&st, v);
      break;
    case OP_EMPTY_TUPLE: rc = push(&st, mk(&st, PK_TUPLE)); break;
    case OP_EMPTY_LIST: rc = push(&st, mk(&st, PK_LIST)); break;
    case OP_EMPTY_DICT: rc = push(&st, mk(&st, PK_DICT)); break;
    case OP_EMPTY_SET: rc = push(&st, mk(&st, PK_SET)); break;
    case OP_BININT:
    case OP_BININT1:
    case OP_BININT2: {
      int n = op == OP_BININT ? 4 : op == OP_BININT1 ? 1 : 2;
      if ((rc = need(&st, (size_t)n, "BININT"))) break;
      if (!(v = mk(&st, PK_INT))) { rc = -1; break; }
      uint64_t u = rd_le(st.b + st.pos, n);
      v->i = n == 4 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
      st.pos += (size_t)n;
      rc = push(&st, v);
      break;
    }
    case OP_LONG1: {
      if ((rc = need(&st, 1, "LONG1"))) break;
      size_t n = st.b[st.pos++];
      if ((rc = need(&st, n, "LONG1"))) break;
      if (!(v = mk(&st, n <= 8 ? PK_INT : PK_BIGINT))) { rc = -1; break; }
      if (n <= 8) {
        uint64_t u = n ? rd_le(st.b + st.pos, (int)n) : 0;
        if (n && n < 8 && (st.b[st.pos + n - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * n); // sign-extend
        v->i = (int64_t)u;
      } else {
        v->s = (const char *)st.b + st.pos;
        v->slen = n;
      }
      st.pos += n;
      rc = push(&st, v);
      break;
    }
    case OP_BINFLOAT: {
      if ((rc = need(&st, 8, "BINFLOAT"))) break;
      if (!(v = mk(&st, PK_FLOAT))) { rc = -1; break; }
      uint64_t u = 0;
      for (int i = 0; i < 8; i++) u = (u << 8) | st.b[st.pos + i];
      memcpy(&v->f, &u, 8);
      st.pos += 8;
      rc = push(&st, v);
      break;
    }
    case OP_BINUNICODE:
    case OP_SHORT_BINSTRING: {
      int w = op == OP_BINUNICODE ? 4 : 1;
      if ((rc = need(&st, (size_t)w, op == OP_BINUNICODE ? "BINUNICODE" : "SHORT_BINSTRING"))) break;
      size_t n = (size_t)rd_le(st.b + st.pos, w);
      st.pos += (size_t)w;
      if ((rc = need(&st, n, op == OP_BINUNICODE ? "BINUNICODE" : "SHORT_BINSTRING"))) break;
      if (!(v = mk(&st, PK_STR))) { rc = -1; break; }
      v->s = (const char *)st.b + st.pos;
      v->slen = n;
      st.pos += n;
      rc = push(&st, v);
      break;
    }
    case OP_TUPLE:
      if ((rc = pop_mark(&st, "TUPLE", &first))) break;
      if (!(v = mk_tuple(&st, first, st.sp - first))) { rc = -1; break; }
      st.sp = first;
      rc = push(&st, v);
      break;
    case OP_TUPLE1:
    case OP_TUPLE2:
    case OP_TUPLE3: {
      size_t k = op - OP_TUPLE1 + 1;
      if (st.sp < floor_sp(&st) + k) { rc = FAIL(&st, "TUPLE%zu on a stack of %zu items (stack underflow)", k, st.sp - floor_sp(&st)); break; }
      if (!(v = mk_tuple(&st, st.sp - k, k))) { rc = -1; break; }
      st.sp -= k;
      rc = push(&st, v);
      break;
    }
    case OP_APPEND:
      if (!(a = pop(&st, "APPEND")) || !(b = top(&st, "APPEND"))) { rc = -1; break; }
      if (b->kind != PK_LIST) { rc = FAIL(&st, "APPEND to a %s (only lists)", kind_name(b->kind)); break; }
      rc = add_item(&st, b, a);
      break;
    case OP_APPENDS:
      if ((rc = pop_mark(&st, "APPENDS", &first))) break;
      if (first <= floor_sp(&st)) { rc = FAIL(&st, "APPENDS with no list below its MARK (stack underflow)"); break; }
      b = st.stack[first - 1];
      if (b->kind != PK_LIST) { rc = FAIL(&st, "APPENDS to a %s (only lists)", kind_name(b->kind)); break; }
      for (size_t i = first; i < st.sp && rc == 0; i++) rc = add_item(&st, b, st.stack[i]);
      st.sp = first;
      break;
    case OP_SETITEM:
      if (!(a = pop(&st, "SETITEM")) || !(b = pop(&st, "SETITEM")) || !(c = top(&st, "SETITEM"))) { rc = -1; break; }
      if (c->kind != PK_DICT) { rc = FAIL(&st, "SETITEM on a %s (only dicts)", kind_name(c->kind)); break; }
      rc = dict_set(&st, c, b, a);
      break;
    case OP_SETITEMS:
      if ((rc = pop_mark(&st, "SETITEMS", &first))) break;
      if (first <= floor_sp(&st)) { rc = FAIL(&st, "SETITEMS with no dict below its MARK (stack underflow)"); break; }
      c = st.stack[first - 1];
      if (c->kind != PK_DICT) { rc = FAIL(&st, "SETITEMS on a %s (only dicts)", kind_name(c->kind)); break; }
      if ((st.sp - first) % 2) { rc = FAIL(&st, "SETITEMS with an odd number of items"); break; }
      for (size_t i = first; i + 1 < st.sp && rc == 0; i += 2) rc = dict_set(&st, c, st.stack[i], st.stack[i + 1]);
      st.sp = first;
      break;
    case OP_BINPUT:
    case OP_LONG_BINPUT: {
      int w = op == OP_BINPUT ? 1 : 4;
      if ((rc = need(&st, (size_t)w, "BINPUT"))) break;
      size_t idx = (size_t)rd_le(st.b + st.pos, w);
      st.pos += (size_t)w;
      if (!(a = top(&st, "BINPUT"))) { rc = -1; break; }
      if (idx >= st.len) { rc = FAIL(&st, "memo index %zu out of range (the pickle has %zu bytes)", idx, st.len); break; }
      if (idx >= st.memo_n) {
        size_t nn = st.memo_n ? st.memo_n : 64;
        while (nn <= idx) nn *= 2;
        gm_pk **nm = realloc(st.memo, nn * sizeof *nm);
        if (!nm) { rc = FAIL(&st, "out of memory"); break; }
        memset(nm + st.memo_n, 0, (nn - st.memo_n) * sizeof *nm);
        st.memo = nm;
        st.memo_n = nn;
      }
      st.memo[idx] = a;
      break;
    }
    case OP_BINGET:
    case OP_LONG_BINGET: {
      int w = op == OP_BINGET ? 1 : 4;
      if ((rc = need(&st, (size_t)w, "BINGET"))) break;
      size_t idx = (size_t)rd_le(st.b + st.pos, w);
      st.pos += (size_t)w;
      if (idx >= st.memo_n || !st.memo[idx]) { rc = FAIL(&st, "%s memo index %zu out of range (never stored by BINPUT)", w == 1 ? "BINGET" : "LONG_BINGET", idx); break; }
      rc = push(&st, st.memo[idx]);
      break;
    }
    case OP_GLOBAL: rc = push(&st, global(&st)); break;
    case OP_REDUCE:
      if (!(a = pop(&st, "REDUCE")) || !(b = pop(&st, "REDUCE"))) { rc = -1; break; }
      rc = push(&st, reduce(&st, b, a));
      break;
    case OP_BUILD:
      if (!(a = pop(&st, "BUILD")) || !(b = top(&st, "BUILD"))) { rc = -1; break; }
      if (b->kind == PK_SKIPPED) break; // a NumPy array's or dtype's state: skipped with it
      if (b->kind == PK_NAMESPACE) { // Namespace.__dict__ = state: the attributes, as inert values
        if (a->kind != PK_DICT) { rc = FAIL(&st, "BUILD on an argparse.Namespace with a %s state (expects a dict)", kind_name(a->kind)); break; }
        for (size_t i = 0; i < a->n && rc == 0; i++) rc = dict_set(&st, b, a->items[2 * i], a->items[2 * i + 1]);
        break;
      }
      if (b->kind != PK_DICT) { rc = FAIL(&st, "BUILD on a %s (gptmeg builds OrderedDict state only)", kind_name(b->kind)); break; }
      break; // an OrderedDict's __dict__ (_metadata): not needed
    case OP_NEWOBJ:
      if (!st.vm->megatron) { rc = FAIL(&st, "NEWOBJ is not read by gptmeg outside a Megatron checkpoint (no allowed class is instantiated in a state dict)"); break; }
      if (!(a = pop(&st, "NEWOBJ")) || !(b = pop(&st, "NEWOBJ"))) { rc = -1; break; }
      if (b->kind != PK_GLOBAL || b->glob != G_NAMESPACE)
        { rc = FAIL(&st, "NEWOBJ on a %s (gptmeg instantiates argparse.Namespace only)", b->kind == PK_GLOBAL ? "global other than argparse.Namespace" : kind_name(b->kind)); break; }
      if (a->kind != PK_TUPLE || a->n != 0) { rc = FAIL(&st, "NEWOBJ argparse.Namespace with arguments (expects ())"); break; }
      rc = push(&st, mk(&st, PK_NAMESPACE));
      break;
    case OP_BINPERSID:
      if (!(a = pop(&st, "BINPERSID"))) { rc = -1; break; }
      rc = push(&st, persid(&st, a));
      break;
    default:
      if (op >= 0x20 && op < 0x7f) rc = FAIL(&st, "opcode '%c' (0x%02x) is not allowed (PyTorch's weights_only opcode set)", op, op);
      else rc = FAIL(&st, "opcode 0x%02x is not allowed (PyTorch's weights_only opcode set)", op);
      break;
    }
    if (rc) break;
  }
  free(st.stack);
  free(st.memo);
  return -1;
}
