#!/usr/bin/env bash
# The Model tab under Xvfb on the fixture model folders (tests/fixtures/models: random tiny models,
# copied here with a byte-level tokenizer.json, tests/model_tokenizer.py): every layer and head as a grid,
# hover, colour by role, the probe switch and its choices (where the run is drawn from, period,
# copies), a click opening that layer and head in the pipeline, File → Open of a model folder,
# errors keeping the previous grid, and cancelling a load; on the trained fixture, the induction
# list by the Train mode's rule.
# Usage: model_view.sh CASE MHASCOPE_BINARY FIXTURES
set -u
case_name=${1//_/-}  # the folder's name is typed into the Open popup, where "_" types a space
bin=$2
fix=$3
source "$(dirname "$0")/gui_common.sh"
PY=/usr/bin/python3


case "$1" in
  model_view)
    copy_model gpt2 gpt
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcdefabcdefabcdef" --script "$(script_from model_view.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in model_gpt2 model_hover model_pipeline; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    # The pipeline shows the clicked layer and head: layer 1 in use, head 3 in the heatmap.
    grep -q "^files_in_use: model $out/gpt$" <<<"$log" || fail "the model folder is not in use: $log"
    grep -q "^heatmap_label: .*head 3" <<<"$log" || fail "the heatmap is not on head 3: $log"
    grep -q "^subtitle: .*layer 1" <<<"$log" || fail "the pipeline is not on layer 1: $log"
    ;;
  model_export)
    copy_model gpt2 gpt
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcdefabcdefabcdef" --script "$(script_from model_export.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_export_popup.png" 1600x1000 || fail "blank model_export_popup.png"
    # The window's page holds what the command line's does for the same folder and text: the same heads,
    # thumbnails, roles and scores (the data block), and the window's workspace besides.
    "$bin" export --model "$out/gpt" --text "abcdefabcdefabcdef" --view model --out "$out/cli.html" >/dev/null \
      || fail "export --view model failed"
    data() { "$PY" -c "import re,sys; t=open(sys.argv[1]).read(); print(re.search(r'id=\"mhascope-data\">(.*?)</script>', t, re.S).group(1))" "$1"; }
    [ "$(data "$out/model_heads.html")" = "$(data "$out/cli.html")" ] || fail "the window's page differs from the command line's"
    [ "$(grep -o '"name":"layer [0-9] head [0-9]"' "$out/cli.html" | wc -l)" -eq 8 ] || fail "not 2 x 4 heads in the page"
    grep -q 'id="mhascope-workspace"' "$out/model_heads.html" || fail "the window's page carries no workspace"
    "$bin" info --workspace "$out/model_heads.html" >/dev/null || fail "the page does not open as a workspace"
    ;;
  model_layer_masks)
    copy_model gemma3 gemma
    log=$(xvfb "$bin" --fresh --model "$out/gemma" --text "the cat sat on the mat" --script "$(script_from model_layer_masks.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_layer_masks.png" 1600x1000 || fail "blank model_layer_masks.png"
    # The global layer: the whole causal past, RoPE at rope_theta (1e6), not the local base.
    grep -q "^model_layer_mask: mask in force: causal, every earlier key; RoPE θ = 1000000$" <<<"$log" \
      || fail "layer 5 is not the global layer: $log"
    ;;
  model_experts)
    copy_model mixtral mixtral
    log=$(xvfb "$bin" --fresh --model "$out/mixtral" --text "kg&a0\`@9k=KI" --script "$(script_from model_experts.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in model_experts_hover model_experts; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    # Token 3 ('a') of the reference sequence: its experts and weights in both layers, as the reference has them.
    want=$("$PY" -c "
import numpy as np
R = '$fix/models/reference/mixtral/'
e, w = np.load(R + 's0_router_experts.npy'), np.load(R + 's0_router_weights.npy')
print('; '.join('layer %d: token «a» → experts %d (%.2f), %d (%.2f)' % (l, e[l, 3, 0], w[l, 3, 0], e[l, 3, 1], w[l, 3, 1]) for l in range(2)))")
    grep -qF "model_token_routing: $want" <<<"$log" || fail "token 3's experts are not the reference's ($want): $log"
    grep -q "^model_layer_routing: layer 1's MLP, a mixture: tokens per expert" <<<"$log" || fail "no routing of layer 1: $log"
    ;;
  model_latent)
    copy_model deepseek_v3 deepseek
    log=$(xvfb "$bin" --fresh --model "$out/deepseek" --text "kg&a0\`@9k=KI" --script "$(script_from model_latent.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_latent.png" 1600x1000 || fail "blank model_latent.png"
    grep -q "^model_latent_cache: 24 numbers per token and layer (r + d_r), against 112 for MHA" <<<"$log" \
      || fail "the cache per token is not said: $log"
    # Layer 0 is dense (first_k_dense_replace 1): the routing starts at layer 1, as the reference's.
    want=$("$PY" -c "
import numpy as np
R = '$fix/models/reference/deepseek_v3/'
e, w = np.load(R + 's0_router_experts.npy'), np.load(R + 's0_router_weights.npy')
print('; '.join('layer %d: token «a» → experts %d (%.2f), %d (%.2f)' % (l, e[l, 3, 0], w[l, 3, 0], e[l, 3, 1], w[l, 3, 1]) for l in (1, 2)))")
    grep -qF "model_token_routing: $want" <<<"$log" || fail "token 3's experts are not the reference's ($want): $log"
    # A click on head 2 of layer 1: the pipeline shows that layer as the forward recorded it, every stage drawn.
    for shot in model_latent_pipeline model_latent_k_rotated model_latent_shapes model_latent_circuits; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    grep -q "^heatmap_label: Softmax (weights) · layer 1 · head 2 · batch 0$" <<<"$log" || fail "not layer 1's head 2: $log"
    grep -q "^circuits_step: .*layer 1, head 2" <<<"$log" || fail "the Circuits tab is not on layer 1's head 2: $log"
    grep -q "^circuits_conventions: .*Multi-head latent attention: each head's key" <<<"$log" \
      || fail "the Circuits tab does not say how it reads a latent layer: $log"
    grep -q "^heatmap_label: Rotate (K) (k_rotated) · layer 1 · head 2 · batch 0$" <<<"$log" || fail "no rotated keys: $log"
    grep -q "^subtitle: .*layer 1 (L = 3).*multi-head latent attention" <<<"$log" || fail "the pipeline is not on layer 1: $log"
    grep -q "^head_dim_width: h·d_k = 4 × 16 = 64 ≠ d_model = 32; values d_v = 12 (h·d_v = 48)$" <<<"$log" \
      || fail "the left column does not say the folder's head widths: $log"
    grep -q "^kv_heads_kind: no K/V heads are cached: each head's keys and values come from one latent of r + d_r = 16 + 8 = 24 numbers per token" <<<"$log" \
      || fail "the left column does not say what the latent caches: $log"
    grep -q "^status_parameters: latent attention: the cache holds r + d_r = 24 numbers per token and layer, against h·(d_k + d_v) = 112 for MHA$" <<<"$log" \
      || fail "the status line does not say what the latent caches: $log"
    # The window's exported page of that head holds the reference's layer 1, head 2 weights.
    page=$(ls "$out"/weights_layer1_b0_h2.html) || fail "no exported page: $(ls "$out")"
    "$PY" -c "
import json, re, sys, numpy as np
t = open('$page').read()
d = json.loads(re.search(r'id=\"mhascope-data\">(.*?)</script>', t, re.S).group(1))
r = np.load('$fix/models/reference/deepseek_v3/s0_attn.npy')[1, 2]
# The page's hover values have two decimals; a masked cell (above the diagonal) has none.
v = np.array([float(x) if x else 0.0 for x in d['heads'][0]['values']]).reshape(d['rows'], d['cols'])
assert d['heads'][0]['name'] == 'head 2' and v.shape == r.shape and abs(v - r).max() <= 0.0051, abs(v - r).max()
assert all((x == '') == (k > q) for q in range(12) for k in range(12) for x in [d['heads'][0]['values'][q * 12 + k]])
" || fail "the window's weights are not the reference's layer 1 head 2"
    ;;
  model_llama)
    copy_model llama_gqa llama bos
    log=$(xvfb "$bin" --fresh --model "$out/llama" --text "one two one two" --script "$(script_from model_llama.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_llama.png" 1600x1000 || fail "blank model_llama.png"
    ;;
  model_errors)
    # Refusals keep the model in use and its grid: a folder without config.json and a config of
    # an unknown model_type (said in the Open popup), a folder without a tokenizer (the pipeline
    # cannot tokenize the text: put back, said).
    copy_model gpt2 gpt
    cp -r "$fix/models/gpt2" "$out/notok" || fail "cannot copy"
    mkdir -p "$out/empty" "$out/bert"
    echo '{"model_type": "bert", "hidden_size": 8}' > "$out/bert/config.json"
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcabc" --script "$(script_from model_errors.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_error.png" 1600x1000 || fail "blank model_error.png"
    ;;
  model_open)
    copy_model gpt2 gpt
    copy_model llama_gqa llama bos
    log=$(xvfb "$bin" --fresh --text "abcabc" --script "$(script_from model_open.txt)") || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_opened.png" 1600x1000 || fail "blank model_opened.png"
    ;;
  model_probe)
    copy_model llama_gqa llama
    log=$(xvfb "$bin" --fresh --model "$out/llama" --text "qwertyuiopaqwertyuiopa" --script "$(script_from model_probe.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in model_probe_alphabet model_probe_hover model_probe_one_token; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    ;;
  model_cancel)
    # A random model big enough (d_model 512, 8 layers, 1024 positions) that its 512-token probe
    # takes longer than a click.
    "$PY" "$here/make_model.py" "$out/big" 512 8 8 1024 || fail "cannot make the big model"
    "$PY" "$here/../model_tokenizer.py" "$out/big" || fail "cannot write the tokenizer"
    log=$(xvfb "$bin" --fresh --model "$out/big" --text "abc" --script "$(script_from model_cancel.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    ;;
  model_roles)
    # The trained fixture has its byte tokenizer. The expected words are the one rule applied to the
    # reference's own numbers (prefix matching and copying of every head on its text), ranked as the
    # list ranks: heads passing first, then by prefix matching, ties in grid order.
    cp -r "$fix/models/trained" "$out/trained" || fail "cannot copy the trained fixture"
    text=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sequences"]["text"]["text"])' \
      "$fix/models/reference/trained/reference.json") || fail "cannot read the reference text"
    "$PY" - "$fix/models/reference/trained/reference.json" "$here/model_roles.txt" "$out" > "$out/model_roles.txt" <<'PY' \
      || fail "cannot write the script"
import json, sys
ref, template, out = sys.argv[1:4]
heads = json.load(open(ref))["sequences"]["text"]["heads"]
f2 = lambda x: f"{x:.2f}"
rows = []
for l, row in enumerate(heads):
    for h, s in enumerate(row):
        pm, cp = s["induction"], s["copying"]
        passes = l >= 1 and pm >= 0.5 and cp >= 0.5
        if l < 1:
            words = f"prefix matching {f2(pm)}, copying {f2(cp)}; layer 0: no earlier head to compose with — it cannot be an induction head"
        elif passes:
            words = f"induction {f2(pm)} copying {f2(cp)}"
        elif cp < 0.5:
            words = f"prefix matching {f2(pm)}, not copying ({f2(cp)})"
        else:
            words = f"prefix matching {f2(pm)}, copying {f2(cp)}"
        rows.append((not passes, -pm, l, h, f"layer {l}, head {h}: {words}"))
rows.sort()
lines = [f"expect_text model_rank_text_{k} {r[4]}" for k, r in enumerate(rows)]
if all(r[0] for r in rows):
    lines.append("expect_text model_ranked_none No head passes the induction rule (prefix matching ≥ 0.50 and copying ≥ 0.50, in layer 1 or later).")
print(open(template).read().replace("@ROLES@", "\n".join(lines)).replace("@OUT@", out))
PY
    log=$(xvfb "$bin" --fresh --model "$out/trained" --text "$text" --script "$out/model_roles.txt") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in model_roles model_roles_list model_roles_entropy; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    /usr/bin/python3 "$here/check_png.py" "$out/model_roles_1100.png" 1100x900 || fail "blank model_roles_1100.png"
    grep -q "^model_chance_copying: [0-9.]* uniform" <<<"$log" || fail "no copying row for the hovered head: $log"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $1"
