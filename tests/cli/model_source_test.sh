#!/usr/bin/env bash
# --model DIR --layer L as one more model source of the commands (core/model_source): export
# pictures of a real layer, run's dump through the same path, info's pipeline of the layer beside
# the folder summary, workspaces that remember the folder, the layer and the text (config and
# tokenizer by SHA-256, weights by size + modification time), and one line for each refusal.
# Fixture folders: tests/fixtures/models (gpt2, llama with GQA), with a byte-level tokenizer.json
# written into copies (model_tokenizer.sh).
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
PY=/usr/bin/python3
source "$(dirname "$0")/model_tokenizer.sh"
# One GEMM for every run, so pictures and dumps compare bit for bit.
export MHASCOPE_GEMM=eigen
M="$FIX/models"; R="$M/reference"
for m in gpt2 llama_gqa; do cp -r "$M/$m" "$T/$m" && mktok "$T/$m"; done
reftext "$R" gpt2 0 "$T/s0.txt"   # 12 tokens
# check NAME PYTHON-EXPRESSION...: ok when the script exits 0
check() {
  local name="$1"; shift
  local out; out="$("$PY" -c "import json, numpy as np, sys
$*" 2>&1)" && ok "$name" || bad "$name: $out"
}
png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

# --- export: a real layer's stage as a picture -------------------------------------------------
for m in gpt2 llama_gqa; do
  out="$("$BIN" export --model "$T/$m" --text-file "$T/s0.txt" --layer 1 --stage weights --head 0 --out "$T/$m.png" 2>&1)"
  png "$T/$m.png" && ok "$m: export --layer 1 --stage weights --head 0 writes a PNG" || bad "$m export: $out"
done
expect_ok "export --head all (GQA: 4 query heads over 2 K/V heads)" \
  "$BIN" export --model "$T/llama_gqa" --text "abc" --layer 0 --stage weights --head all --out "$T/all.png"
expect_ok "export --weight w_k of a GQA layer (d_model x N*d_k)" \
  "$BIN" export --model "$T/llama_gqa" --text "abc" --layer 1 --weight w_k --out "$T/wk.svg"
expect_ok "export of the model given as its config.json" \
  "$BIN" export --model "$T/gpt2/config.json" --text "abc" --stage scores --out "$T/cfg.png"

# --- run --dump: the layer through the model source; numbers equal the PyTorch reference -------
for m in gpt2 llama_gqa; do
  expect_ok "$m: run --model --layer 1 --dump" "$BIN" run --model "$T/$m" --text-file "$T/s0.txt" --layer 1 --dump "$T/d_$m"
  check "$m: the dump's weights equal the reference attention, its query the reference normed input" "
w = np.load('$T/d_$m/weights.npy'); r = np.load('$R/$m/s0_attn.npy')[1]
assert w.shape == (1,) + r.shape, (w.shape, r.shape); assert abs(w[0] - r).max() < 2e-5
q = np.load('$T/d_$m/query.npy'); n = np.load('$R/$m/s0_normed.npy')[1]
assert abs(q[0] - n).max() < 2e-5, abs(q[0] - n).max()
assert np.load('$T/d_$m/token_ids.npy')[0].tolist() == np.load('$R/$m/s0_tokens.npy').tolist()"
done
check "llama GQA dump: h = 4 query heads, N = 2 K/V heads, RoPE stages recorded" "
d = json.load(open('$T/d_llama_gqa/trace.json'))
assert d['h'] == 4 and d['kv_heads'] == 2 and d['config']['positions'] == 'rope', (d['h'], d['kv_heads'])
assert np.load('$T/d_llama_gqa/k_heads.npy').shape[1] == 2"

# --- info: the folder's summary, then the layer's pipeline -------------------------------------
out="$("$BIN" info --model "$T/llama_gqa" --text "abc" --layer 1 2>&1)"
grep -q "^Model folder" <<<"$out" && grep -q "^mhascope info: B=1  T_q=3" <<<"$out" \
  && grep -q "llama model .*, layer 1 (L = 2), 3 tokens (tokenizer.json), RoPE theta 10000" <<<"$out" \
  && grep -q "^Shape trace" <<<"$out" && grep -q "kv heads N  *2" <<<"$out" \
  && ok "info --model --text --layer: summary, the layer's describe line, its pipeline" || bad "info: $out"
out="$("$BIN" info --model "$T/gpt2" --text "ab" 2>&1)"
grep -q "layer 0 (L = 2), 2 tokens (tokenizer.json), learned positions inside the hidden states" <<<"$out" \
  && grep -q "positions  *none" <<<"$out" && ok "info: GPT-2's learned positions are said to be inside the hidden states" \
  || bad "gpt2 info: $out"
out="$("$BIN" info --model "$T/gpt2" 2>&1)"
grep -q "^Model folder" <<<"$out" && ! grep -q "Shape trace" <<<"$out" && ok "info --model alone: the summary only" \
  || bad "info --model alone: $out"

# --- workspaces: the folder, the layer and the text; the same picture again ---------------------
expect_ok "export --save-workspace of a model layer" "$BIN" export --model "$T/llama_gqa" --text-file "$T/s0.txt" \
  --layer 1 --stage weights --head 2 --out "$T/a.png" --save-workspace "$T/ws.json"
check "the workspace records the folder (config + tokenizer hashed, weights by size + mtime), layer and text" "
w = json.load(open('$T/ws.json')); f = w['files']
assert f['layer'] == 1 and w['config']['text'] == open('$T/s0.txt').read(), (f.get('layer'), w['config']['text'])
names = {e['name']: e for e in f['model']['files']}
assert 'sha256' in names['config.json'] and 'sha256' in names['tokenizer.json'], names
assert 'mtime_ns' in names['model.safetensors'] and 'sha256' not in names['model.safetensors'], names
assert w['view']['head'] == 2"
expect_ok "export --workspace (its own picture)" "$BIN" export --workspace "$T/ws.json" --out "$T/b.png"
cmp -s "$T/a.png" "$T/b.png" && ok "a model workspace draws the same picture again" || bad "model workspace: pictures differ"
expect_ok "run --workspace --dump" "$BIN" run --workspace "$T/ws.json" --dump "$T/d_ws"
expect_ok "run --model --dump of the same layer" "$BIN" run --model "$T/llama_gqa" --text-file "$T/s0.txt" --layer 1 --dump "$T/d_cli"
for f in weights.npy query.npy output.npy token_ids.npy; do
  cmp -s "$T/d_ws/$f" "$T/d_cli/$f" || bad "workspace dump: $f differs"
done
ok "the workspace's dump equals the command line's (weights, query, output, token ids)"
out="$("$BIN" info --workspace "$T/ws.json" --text "xy" 2>&1)"
grep -q "T_q=2" <<<"$out" && ok "--text wins over the workspace's text" || bad "--text over workspace: $out"
out="$("$BIN" info --workspace "$T/ws.json" --layer 0 2>&1)"
grep -q "layer 0 (L = 2)" <<<"$out" && ok "--layer wins over the workspace's layer" || bad "--layer over workspace: $out"
# Moved together with the workspace: found again, said.
mkdir -p "$T/moved" && cp -rp "$T/llama_gqa" "$T/moved/llama_gqa" && cp "$T/ws.json" "$T/moved/ws.json"
mv "$T/llama_gqa" "$T/llama_gqa.away"
"$PY" - "$T/moved/ws.json" <<'PYEOF'
import json, sys
w = json.load(open(sys.argv[1])); w['files']['model']['relative'] = 'llama_gqa'; json.dump(w, open(sys.argv[1], 'w'))
PYEOF
err="$("$BIN" export --workspace "$T/moved/ws.json" --out "$T/c.png" 2>&1 >/dev/null)"
# (the subtitle names the folder, so the picture says where it was read from)
grep -q "is no longer at" <<<"$err" && png "$T/c.png" && ok "a moved model folder is found beside the workspace" \
  || bad "moved folder: $err"
mv "$T/llama_gqa.away" "$T/llama_gqa"
# Changed: config.json by its hash, the weights by their modification time.
cp -rp "$T/llama_gqa" "$T/llama_keep"
sed -i 's/"rms_norm_eps": 1e-05/"rms_norm_eps": 2e-05/' "$T/llama_gqa/config.json"  # same size, other bytes
expect_error "a changed config.json is refused" "config.json: SHA-256" "$BIN" export --workspace "$T/ws.json" --out "$T/e.png"
rm -rf "$T/llama_gqa" && cp -rp "$T/llama_keep" "$T/llama_gqa"
touch -d "2001-01-01" "$T/llama_gqa/model.safetensors"
expect_error "re-written weights (another mtime) are refused" "model.safetensors: modified since" \
  "$BIN" export --workspace "$T/ws.json" --out "$T/e.png"
rm -rf "$T/llama_gqa" && cp -rp "$T/llama_keep" "$T/llama_gqa"
expect_ok "the folder as it was opens again" "$BIN" export --workspace "$T/ws.json" --out "$T/f.png"
# A crafted record cannot reach outside the folder.
"$PY" - "$T/ws.json" "$T/bad.json" <<'PYEOF'
import json, sys
w = json.load(open(sys.argv[1])); w['files']['model']['files'][0]['name'] = '../x.json'; json.dump(w, open(sys.argv[2], 'w'))
PYEOF
expect_error "a record naming a file outside the folder" "must be a file name inside the folder" \
  "$BIN" info --workspace "$T/bad.json"
"$PY" - "$T/ws.json" "$T/bad2.json" "$T/bad3.json" <<'PYEOF'
import json, sys
w = json.load(open(sys.argv[1])); files = w['files']['model']['files']
weights = [e for e in files if 'mtime_ns' in e][0]; weights['sha256'] = '0' * 64; json.dump(w, open(sys.argv[2], 'w'))
w = json.load(open(sys.argv[1])); w['files']['model']['files'] = [e for e in w['files']['model']['files'] if e['name'] != 'config.json']
json.dump(w, open(sys.argv[3], 'w'))
PYEOF
expect_error "a record with both a hash and a time" "needs exactly one of sha256" "$BIN" info --workspace "$T/bad2.json"
expect_error "a model record without config.json" "must record config.json with its sha256" "$BIN" info --workspace "$T/bad3.json"
expect_error "a workspace's layer out of range names the key" "/files/layer: layer 5 is outside the model's 2 layers" \
  bash -c "sed 's/\"layer\": 1/\"layer\": 5/' '$T/ws.json' > '$T/ws5.json' && '$BIN' info --workspace '$T/ws5.json'"

# --- one clear line for each refusal ------------------------------------------------------------
G="$T/gpt2"
expect_error "--model with --checkpoint" "both give the layer to show; keep one" \
  "$BIN" export --model "$G" --text ab --checkpoint "$G/model.safetensors" --out "$T/e.png"
expect_error "--model with --weights" "cannot be used with --model: the model folder's safetensors" \
  "$BIN" export --model "$G" --text ab --weights "$G/model.safetensors" --out "$T/e.png"
expect_error "--model with --query" "--query '$FIX/torch/cross_padding/query.npy' cannot be used with --model" \
  "$BIN" info --model "$G" --text ab --query "$FIX/torch/cross_padding/query.npy"
expect_error "--model with --key-padding-mask" "--key-padding-mask" \
  "$BIN" info --model "$G" --text ab --key-padding-mask "$FIX/torch/cross_padding/key_padding_mask.npy"
expect_error "--model with --attn-mask" "the model's mask is causal" \
  "$BIN" info --model "$G" --text ab --attn-mask "$FIX/torch/cross_padding/key_padding_mask.npy"
expect_error "--layer outside 0 .. L-1 (GPT-2: n_layer)" "--layer 2 is outside the model's 2 layers (0 .. 1, n_layer in $G/config.json)" \
  "$BIN" export --model "$G" --text ab --layer 2 --out "$T/e.png"
expect_error "--layer outside 0 .. L-1 (Llama: num_hidden_layers)" "num_hidden_layers in $T/llama_gqa/config.json" \
  "$BIN" info --model "$T/llama_gqa" --text ab --layer 7
expect_error "options the folder decides, each named" "drop --d-model, --heads, --seed, --mask, --positions, --kv-heads, --window" \
  "$BIN" export --model "$G" --text ab --d-model 8 --heads 2 --seed 3 --mask none --positions rope --kv-heads 1 \
  --window 4 --out "$T/e.png"
expect_error "--preset with --model" "drop --preset" "$BIN" info --model "$G" --text ab --preset cat
expect_error "empty text" "--text is empty: enter at least one token" "$BIN" export --model "$G" --text "" --out "$T/e.png"
expect_error "no text" "--model needs the text" "$BIN" export --model "$G" --layer 1 --out "$T/e.png"
"$PY" -c "print('x' * 33, end='')" > "$T/long.txt"
expect_error "a text over GPT-2's n_positions" "is 33 tokens, more than the model's 32 positions (n_positions" \
  "$BIN" export --model "$G" --text-file "$T/long.txt" --out "$T/e.png"
cp -r "$T/llama_gqa" "$T/llama_long" && sed -i 's/"max_position_embeddings": 64/"max_position_embeddings": 4000/' "$T/llama_long/config.json"
"$PY" -c "print('ab' * 1000, end='')" > "$T/t2000.txt"
expect_error "the memory budget: only a shorter text helps, said" "more than the memory budget of 1.0 MiB; shorten the text (the model fixes h = 4 and d_model = 32)" \
  "$BIN" export --model "$T/llama_long" --text-file "$T/t2000.txt" --memory-budget 1 --out "$T/e.png"
[ ! -e "$T/e.png" ] && ok "no refused export wrote a picture" || bad "e.png was written"
expect_error "--text-file without --model" "--text-file needs --model DIR" "$BIN" export --text-file "$T/s0.txt" --out "$T/e.png"
expect_error "--layer without a layered source" "--layer needs --checkpoint" "$BIN" export --layer 1 --out "$T/e.png"

# --- a workspace whose folder moved elsewhere: --model names the new place -----------------------
cp -r "$T/llama_gqa" "$T/lw" && mkdir -p "$T/wsdir"
expect_ok "a workspace of folder lw" "$BIN" export --model "$T/lw" --text-file "$T/s0.txt" --layer 1 --stage weights \
  --out "$T/lw.png" --save-workspace "$T/wsdir/lw.json"
"$BIN" run --model "$T/lw" --text-file "$T/s0.txt" --layer 1 --dump "$T/d_lw" >/dev/null 2>&1
mkdir -p "$T/elsewhere" && mv "$T/lw" "$T/elsewhere/lw2"
err="$("$BIN" export --workspace "$T/wsdir/lw.json" --out "$T/e.png" 2>&1 >/dev/null)"
grep -qF "was moved or deleted: it is not at '$T/lw'; give its new place" <<<"$err" && ! grep -q "neither" <<<"$err" \
  && ok "a moved folder: the one place looked at is named once, and how to give the new one" || bad "moved: $err"
expect_ok "export --workspace --model NEWDIR (the recorded folder is not looked for)" \
  "$BIN" export --workspace "$T/wsdir/lw.json" --model "$T/elsewhere/lw2" --out "$T/lw_moved.png"
"$BIN" run --workspace "$T/wsdir/lw.json" --model "$T/elsewhere/lw2" --dump "$T/d_lw2" >/dev/null 2>&1
cmp -s "$T/d_lw/weights.npy" "$T/d_lw2/weights.npy" && cmp -s "$T/d_lw/token_ids.npy" "$T/d_lw2/token_ids.npy" \
  && ok "the moved folder gives the same layer (the workspace's layer and text)" || bad "moved folder: the dumps differ"
out="$("$BIN" info --workspace "$T/wsdir/lw.json" --model "$T/elsewhere/lw2" --layer 0 2>&1)"
grep -q "layer 0 (L = 2)" <<<"$out" && ok "--layer still wins over the workspace's layer with --model" || bad "--layer: $out"

# --- no output replaces a file the model folder is read from (--force included) -----------------
OW="$T/ow"; SH="$T/sh"
cp -r "$M/gpt2" "$OW" && mktok "$OW" && cp -r "$M/llama_sharded" "$SH" && mktok "$SH"
printf 'hi' > "$OW/t.png"; printf 'hi' > "$T/t.json"
sums() { (cd "$1" && find . -type f | sort | xargs md5sum); }
before_ow="$(sums "$OW")"; before_sh="$(sums "$SH")"; before_t="$(md5sum < "$T/t.json")"
expect_error "--save-weights onto the folder's model.safetensors" "is the same file as --model's model.safetensors" \
  "$BIN" export --model "$OW" --text hi --stage weights --out "$T/x.png" --save-weights "$OW/model.safetensors"
expect_error "--save-weights onto a shard the index names" "--model's model-00002-of-00002.safetensors" \
  "$BIN" export --model "$SH" --text hi --stage weights --out "$T/x.png" --save-weights "$SH/model-00002-of-00002.safetensors"
expect_error "--save-weights onto model.safetensors beside an index (it would change the folder)" "--model's model.safetensors" \
  "$BIN" export --model "$SH/config.json" --text hi --stage weights --out "$T/x.png" --save-weights "$SH/model.safetensors"
expect_error "--save-workspace onto the folder's config.json" "is the same file as --model's config.json" \
  "$BIN" export --model "$OW" --text hi --stage weights --out "$T/x.png" --save-workspace "$OW/config.json"
expect_error "info --save-workspace onto the index" "--model's model.safetensors.index.json" \
  "$BIN" info --model "$SH" --text hi --save-workspace "$SH/model.safetensors.index.json"
expect_error "export --out onto --text-file" "is the same file as --text-file" \
  "$BIN" export --model "$OW" --text-file "$OW/t.png" --stage weights --out "$OW/t.png"
expect_error "export --weight --out onto --text-file" "is the same file as --text-file" \
  "$BIN" export --model "$OW" --text-file "$OW/t.png" --weight w_q --out "$OW/t.png"
expect_error "--save-workspace onto --text-file" "is the same file as --text-file" \
  "$BIN" info --model "$OW" --text-file "$T/t.json" --save-workspace "$T/t.json"
expect_error "predict --json --force onto tokenizer.json" "is the same file as --model's tokenizer.json" \
  "$BIN" predict --model "$OW" --text hi --json "$OW/tokenizer.json" --force
expect_error "predict --json --force onto model.safetensors" "--model's model.safetensors" \
  "$BIN" predict --model "$OW" --text hi --json "$OW/model.safetensors" --force
expect_error "predict --json --force onto the index" "--model's model.safetensors.index.json" \
  "$BIN" predict --model "$SH" --text hi --json "$SH/model.safetensors.index.json" --force
expect_error "predict --json --force onto --text-file" "is the same file as --text-file" \
  "$BIN" predict --model "$OW" --text-file "$T/t.json" --json "$T/t.json" --force
expect_error "run --dump into the model folder" "the output replaces the whole folder" \
  "$BIN" run --model "$OW" --text hi --dump "$OW"
# One rule for every command: nothing is written inside the model folder, not even a new file.
expect_error "predict --json: a new file inside the model folder" "is inside the model folder" \
  "$BIN" predict --model "$OW" --text hi --json "$OW/new.json"
expect_error "export --out: a new file inside the model folder" "is inside the model folder" \
  "$BIN" export --model "$OW" --text hi --stage weights --out "$OW/new.png"
expect_error "circuits --json: a new file inside the model folder" "is inside the model folder" \
  "$BIN" circuits --model "$OW" --text hi --json "$OW/new.json"
# The tokenizer is held to the model before it is built: a vocabulary far larger than vocab_size is
# refused after a counting pass; one that fits is held to --memory-budget before it is read.
TK="$T/bigtok"; cp -r "$M/gpt2" "$TK" && mktok "$TK"
"$PY" -c "
import json; p = '$TK/tokenizer.json'; j = json.load(open(p))
for i in range(1 << 16): j['model']['vocab']['zz%d' % i] = 1000 + i
json.dump(j, open(p, 'w'))"
start=$(date +%s%N)
expect_error "a tokenizer of 65 792 tokens for a model of 100" "more than twice the model's vocabulary of 100" \
  "$BIN" info --model "$TK" --text hi
ms=$(( ($(date +%s%N) - start) / 1000000 ))
mktok "$TK" && head -c 2000000 /dev/zero | tr '\0' ' ' >> "$TK/tokenizer.json"  # 2 MB of JSON whitespace
expect_error "a tokenizer beyond --memory-budget is refused before it is read" "reading the tokenizer" \
  "$BIN" info --model "$TK" --text hi --memory-budget 1
echo "  (the oversized tokenizer was refused in $ms ms)"
[ "$(sums "$OW")" = "$before_ow" ] && [ "$(sums "$SH")" = "$before_sh" ] && [ "$(md5sum < "$T/t.json")" = "$before_t" ] \
  && ok "the model folders and the text files are byte for byte as before" || bad "a model folder or text file changed"

echo "$fails failure(s)"
[ $fails -eq 0 ]
