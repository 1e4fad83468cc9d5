// The gptmeg side of tools/ref/probe_linear_bwd.py: reads DIR/inp.bin (N x C), DIR/w.bin (C x OC, or
// OC x C with trans), DIR/dout.bin (N x OC) as f32 holding dtype values, runs gm_op_linear_bwd on
// the host's torch CPU target with `threads`, writes DIR/gm_dx.bin, gm_dw.bin, gm_db.bin (not with trans).
//   probe_linear_bwd DIR N C OC trans threads [f32|f16|bf16]
// Build (from the repo root, after building gptmeg_lib in build-h):
//   gcc -O2 -Iinclude -fopenmp tools/ref/probe_linear_bwd.c build-h/libgptmeg.a -lsleef -lmpfr -lgmp
//       -lcjson -lpcre2-8 -lm -o build-h/probe_linear_bwd   (one line)
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "probe_io.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  const char *d = argv[1]; int N = atoi(argv[2]), C = atoi(argv[3]), OC = atoi(argv[4]), tr = atoi(argv[5]), th = atoi(argv[6]);
  const char *dtn = argc > 7 ? argv[7] : "f32";
  gm_dtype dt = dtn[1] == '3' ? GM_F32 : dtn[0] == 'b' ? GM_BF16 : GM_F16;
  gm_profile p; gm_profile_get("hf", dt, &p);
  gm_op_ctx c; gm_op_ctx_init(&c, &p, th, NULL, NULL);
  float *dout = probe_read_floats(d, "dout.bin", (size_t)N * OC), *inp = probe_read_floats(d, "inp.bin", (size_t)N * C), *w = probe_read_floats(d, "w.bin", (size_t)C * OC);
  float *dx = malloc((size_t)N * C * 4), *dw = malloc((size_t)C * OC * 4), *db = malloc((size_t)OC * 4);
  gm_op_weight W = {w, tr != 0, NULL, NULL};
  if (gm_op_linear_bwd(&c, dx, dw, tr ? NULL : db, dout, inp, &W, N, C, OC)) { fprintf(stderr, "%s\n", gm_errmsg()); return 1; }
  probe_write_floats(d, "gm_dx.bin", dx, (size_t)N * C); probe_write_floats(d, "gm_dw.bin", dw, (size_t)C * OC); if (!tr) probe_write_floats(d, "gm_db.bin", db, OC);
  return 0;
}
