#!/bin/sh
# The layering rule, checked on every build (CMake's gm_layer_check target runs it):
#   core < io < kernels < tok < ops < model < train < lab < cli
# A file under src/LAYER/ may include the public headers (include/gptmeg/*.h) of LAYER and the
# layers before it, and the private headers of its own folder (src/LAYER/...); a public header
# may include public headers of its own layer and the layers before it. Anything else is an
# upward or sideways include: one line per offence, and the build fails.
# Usage: tools/check_layers.sh [REPO_ROOT]
cd "${1:-.}" || exit 1
find src include/gptmeg -name '*.[ch]' | sort | xargs grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' |
awk '
BEGIN {
  n = split("core io kernels tok ops model train lab cli", order, " ")
  for (i = 1; i <= n; i++) rank[order[i]] = i
  # The public headers, each owned by one layer.
  split("core:core inputs:core cpu:core target:core npy:io safetensors:io config:io gelu:kernels kernels:kernels " \
        "ckpt:io tok:tok ops:ops model:model optim:train train:train lab:lab certify:lab diverge:lab traincmp:lab", pairs, " ")
  for (i in pairs) { split(pairs[i], kv, ":"); owner[kv[1]] = kv[2] }
  bad = 0
}
{
  split($0, parts, ":"); file = parts[1]; line = parts[2]
  inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
  if (file ~ /^include\/gptmeg\//) { h = file; sub(/^include\/gptmeg\//, "", h); sub(/\.h$/, "", h)
    if (!(h in owner)) { print file ": a public header with no layer (add it to tools/check_layers.sh)"; bad = 1; next }
    layer = owner[h]
  } else { layer = file; sub(/^src\//, "", layer); sub(/\/.*$/, "", layer) }
  if (!(layer in rank)) { print file ": under no layer (" order[1] " ... cli)"; bad = 1; next }
  if (inc ~ /^gptmeg\//) {
    h = inc; sub(/^gptmeg\//, "", h); sub(/\.h$/, "", h)
    if (!(h in owner)) { print file ":" line ": includes " inc ", a public header with no layer"; bad = 1; next }
    if (rank[owner[h]] > rank[layer]) {
      print file ":" line ": includes " inc " (layer " owner[h] "), above " layer " in core < io < kernels < tok < ops < model < train < lab < cli"
      bad = 1
    }
  } else if (inc ~ /\//) {
    dir = inc; sub(/\/.*$/, "", dir)
    if (file ~ /^include\//) { print file ":" line ": a public header includes the private " inc; bad = 1 }
    else if (dir != layer) { print file ":" line ": includes " inc ", a private header of " dir "; use its public header in include/gptmeg/"; bad = 1 }
  }
}
END { exit bad }'
