// Where the pinned PyTorch's own library is, for the kernels that call into it (the op-by-op
// GELUs' f32 tanh/erf/exp are MKL's VML inside libtorch_cpu.so; nothing else reproduces its bits).
// The search, first hit wins (docs/numerics.md "Torch CPU targets"):
//   1. GPTMEG_TORCH_MKL: a path to the library; "none" (or "0") turns the search off;
//   2. the active Python environment: $VIRTUAL_ENV, then $CONDA_PREFIX;
//   3. every python3 on PATH: its prefix (DIR/..) holds lib/python3.*/site-packages (venv, pyenv,
//      conda, /usr/local) or lib/python3/dist-packages (Debian);
//   4. the user's ~/.local/lib/python3.*/site-packages.
// In each, torch/lib/libtorch_cpu.so. Found once and kept.
#include "gptmeg/core.h"
#include "gptmeg/target.h"

#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char found[PATH_MAX];
static const char *found_how = "not found";
static pthread_once_t once = PTHREAD_ONCE_INIT;

// The first PREFIX/lib/python3*/{site,dist}-packages/torch/lib/libtorch_cpu.so, or PREFIX/lib/python3/dist-packages/...
static bool in_prefix(const char *prefix, const char *how) {
  static const char *pats[] = {"%s/lib/python3*/site-packages/torch/lib/libtorch_cpu.so",
                               "%s/lib/python3*/dist-packages/torch/lib/libtorch_cpu.so",
                               "%s/lib/python3/dist-packages/torch/lib/libtorch_cpu.so"};
  for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
    char pat[PATH_MAX];
    if ((size_t)snprintf(pat, sizeof pat, pats[i], prefix) >= sizeof pat) continue;
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
      snprintf(found, sizeof found, "%s", g.gl_pathv[g.gl_pathc - 1]); // the newest python3.N
      found_how = how;
      globfree(&g);
      return true;
    }
    globfree(&g);
  }
  return false;
}

static void search(void) {
  const char *env = getenv("GPTMEG_TORCH_MKL");
  if (env && *env) {
    if (strcmp(env, "none") == 0 || strcmp(env, "0") == 0) { found_how = "turned off by GPTMEG_TORCH_MKL"; return; }
    snprintf(found, sizeof found, "%s", env);
    found_how = "GPTMEG_TORCH_MKL";
    return;
  }
  const char *venv = getenv("VIRTUAL_ENV"), *conda = getenv("CONDA_PREFIX");
  if (venv && *venv && in_prefix(venv, "$VIRTUAL_ENV")) return;
  if (conda && *conda && in_prefix(conda, "$CONDA_PREFIX")) return;
  const char *path = getenv("PATH");
  if (path) {
    char *copy = strdup(path), *save = NULL;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
      char py[PATH_MAX], prefix[PATH_MAX];
      if ((size_t)snprintf(py, sizeof py, "%s/python3", dir) >= sizeof py || access(py, X_OK) != 0) continue;
      if ((size_t)snprintf(prefix, sizeof prefix, "%s/..", dir) >= sizeof prefix) continue;
      if (in_prefix(prefix, "python3 on PATH")) break;
    }
    free(copy);
    if (*found) return;
  }
  const char *home = getenv("HOME");
  if (home && *home) {
    char local[PATH_MAX];
    if ((size_t)snprintf(local, sizeof local, "%s/.local", home) < sizeof local) in_prefix(local, "~/.local");
  }
}

const char *gm_torch_lib_path(const char **how) {
  pthread_once(&once, search);
  if (how) *how = found_how;
  return *found ? found : NULL;
}
