#!/usr/bin/env bash
# `run --model DIR` and `predict --model DIR` on the fixture model folders (tests/fixtures/models,
# random tiny models made by scripts/gen_model_fixtures.py, with their PyTorch reference outputs).
# The folders carry no tokenizer, so the test writes a byte-level tokenizer.json into a copy
# (model_tokenizer.sh: one token per byte, so the reference token sequences are plain texts).
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
M="$FIX/models"; R="$M/reference"
PY=/usr/bin/python3

source "$(dirname "$0")/model_tokenizer.sh"  # mktok, reftext
# check NAME PYTHON-EXPRESSION...: ok when the script exits 0
check() {
  local name="$1"; shift
  local out; out="$("$PY" -c "import json, numpy as np, sys
$*" 2>&1)" && ok "$name" || bad "$name: $out"
}

for m in gpt2 llama_gqa mistral qwen2 phi3 smollm3 qwen3 olmo2 gemma2 gemma3 mixtral qwen3_moe gpt_oss gpt_oss_bf16; do cp -r "$M/$m" "$T/$m" && mktok "$T/$m"; done
reftext "$R" gpt2 0 "$T/s0.txt"   # 12 tokens: kg&a0`@9k=KI
reftext "$R" gpt2 1 "$T/s1.txt"   # 7 tokens with a newline: Vr_J\nPJ

# --- run --model: layer L's stages, equal to the reference's attention weights for that layer --
for m in gpt2 llama_gqa mistral qwen2 phi3 smollm3 qwen3 olmo2 gemma2 gemma3 mixtral qwen3_moe gpt_oss gpt_oss_bf16; do
  for L in 0 1; do
    out="$("$BIN" run --model "$T/$m" --text-file "$T/s0.txt" --layer $L --dump "$T/d_${m}_$L" 2>&1)" \
      || bad "$m layer $L: $out"
    check "$m layer $L: weights.npy equals the reference attention weights" "
w = np.load('$T/d_${m}_$L/weights.npy'); r = np.load('$R/$m/s0_attn.npy')[$L]
assert w.shape == (1,) + r.shape, (w.shape, r.shape)
d = abs(w[0] - r).max(); assert d < 2e-5, d"
  done
done
check "token_ids.npy: (B, T) = (1, 12) int64, the reference ids" "
t = np.load('$T/d_gpt2_1/token_ids.npy'); r = np.load('$R/gpt2/s0_tokens.npy')
assert t.dtype == np.int64 and t.shape == (1, 12), (t.dtype, t.shape)
assert (t[0] == r).all(), t"
check "trace.json: the same keys as run --dump, the token ids, the layer" "
d = json.load(open('$T/d_gpt2_1/trace.json'))
assert d['B'] == 1 and d['T_q'] == 12 and d['h'] == 4 and d['config']['layer'] == 1, d['config']
assert d['token_ids'] == np.load('$R/gpt2/s0_tokens.npy').tolist()
assert {s['stage'] for s in d['stages']} >= {'scores', 'weights', 'output'}"
# The newline is text (a token of its own), and the text reaches the tokenizer unchanged.
"$BIN" run --model "$T/llama_gqa" --text-file "$T/s1.txt" --layer 1 --dump "$T/d_nl" >/dev/null 2>&1
check "a newline is a token: llama layer 1 on the 7-token reference" "
w = np.load('$T/d_nl/weights.npy'); r = np.load('$R/llama_gqa/s1_attn.npy')[1]
t = np.load('$T/d_nl/token_ids.npy')
assert t[0].tolist() == np.load('$R/llama_gqa/s1_tokens.npy').tolist(), t
assert abs(w[0] - r).max() < 2e-5"
# Without --layer: layer 0, said in the output.
out="$("$BIN" run --model "$T/gpt2" --text-file "$T/s0.txt" --dump "$T/d_def" 2>&1)"
grep -q "layer 0 (no --layer given" <<<"$out" && ok "no --layer: layer 0, said" || bad "no --layer: $out"
check "no --layer: the reference's layer 0" "
assert abs(np.load('$T/d_def/weights.npy')[0] - np.load('$R/gpt2/s0_attn.npy')[0]).max() < 2e-5"
# '|' is text with a model, not a batch separator; tabs too.
"$BIN" run --model "$T/gpt2" --text "a|b	c" --dump "$T/d_bar" >/dev/null 2>&1
check "'|' and a tab are tokens: B = 1, T = 5" "
t = np.load('$T/d_bar/token_ids.npy'); w = np.load('$T/d_bar/weights.npy')
assert t.tolist() == [[65, 92, 66, 95, 67]] and w.shape == (1, 4, 5, 5), (t, w.shape)"
# A model dump replaces an earlier one (token_ids.npy is part of a dump).
expect_ok "a model dump replaces an earlier model dump" "$BIN" run --model "$T/gpt2" --text "ab" --dump "$T/d_bar"
# A BOS when the tokenizer's template asks for one.
cp -r "$M/llama_gqa" "$T/llama_bos" && mktok "$T/llama_bos" bos
out="$("$BIN" run --model "$T/llama_bos" --text "ab" --dump "$T/d_bos" 2>&1)"
grep -q "BOS '<|begin_of_text|>' first" <<<"$out" && ok "BOS: said in the output" || bad "bos: $out"
check "BOS: token_ids start with the template's token" "
assert np.load('$T/d_bos/token_ids.npy').tolist() == [[98, 65, 66]]"
check "no BOS without a template (GPT-2's config names bos_token_id 99, its tokenizer adds none)" "
assert np.load('$T/d_def/token_ids.npy')[0, 0] == 75"

# --- predict: top-k next tokens and the logit lens ------------------------------------------------
for m in gpt2 llama_gqa; do
  out="$("$BIN" predict --model "$T/$m" --text-file "$T/s0.txt" --top 5 --json "$T/p_$m.json" 2>&1)" || bad "predict $m: $out"
  check "$m predict: probabilities in (0, 1], each top-5 sums to at most 1, sorted" "
d = json.load(open('$T/p_$m.json'))
assert d['T'] == 12 and len(d['predictions']) == 12
for top in d['predictions']:
    p = [c['probability'] for c in top]
    assert len(p) == 5 and all(0 < x <= 1 for x in p) and sum(p) <= 1 + 1e-9 and p == sorted(p, reverse=True), p"
  check "$m predict: top-1 = argmax of the reference logits" "
d = json.load(open('$T/p_$m.json')); r = np.load('$R/$m/s0_logits.npy')
assert [t[0]['id'] for t in d['predictions']] == r.argmax(-1).tolist()"
  check "$m logit lens: L rows of T cells; the last layer's top-1 is the model's own" "
d = json.load(open('$T/p_$m.json'))
assert len(d['logit_lens']) == d['layers'] == 2 and all(len(r) == 12 for r in d['logit_lens'])
assert [c['id'] for c in d['logit_lens'][-1]] == [t[0]['id'] for t in d['predictions']]"
done
# DeepSeek's latent attention: predict's top-1 is the reference's on each folder's own sequence, bench runs the
# forward, run --model dumps a layer as the forward recorded it, and the commands that re-run one layer through the
# engine's W_q, W_k, W_v refuse a latent layer.
for m in deepseek_v2 deepseek_v3; do
  cp -r "$M/$m" "$T/$m" && mktok "$T/$m"
  reftext "$R" "$m" 0 "$T/${m}_s0.txt"
  out="$("$BIN" predict --model "$T/$m" --text-file "$T/${m}_s0.txt" --top 3 --json "$T/p_$m.json" 2>&1)" || bad "predict $m: $out"
  check "$m predict: top-1 = argmax of the reference logits" "
d = json.load(open('$T/p_$m.json')); r = np.load('$R/$m/s0_logits.npy')
assert [t[0]['id'] for t in d['predictions']] == r.argmax(-1).tolist()"
  expect_ok "$m bench --model runs the forward" "$BIN" bench --model "$T/$m" --tokens 8 --repeat 1
  # run --model: the layer as the forward recorded it, every stage; k's rotary part is the one key of every head.
  out="$("$BIN" run --model "$T/$m" --text-file "$T/${m}_s0.txt" --layer 1 --dump "$T/d_$m" 2>&1)" || bad "run $m: $out"
  check "$m run --model layer 1: weights.npy equals the reference, v_heads d_v wide, the rotary key shared" "
w = np.load('$T/d_$m/weights.npy'); r = np.load('$R/$m/s0_attn.npy')[1]
assert w.shape == (1,) + r.shape and abs(w[0] - r).max() < 2e-5, abs(w[0] - r).max()
v, k = np.load('$T/d_$m/v_heads.npy'), np.load('$T/d_$m/k_rotated.npy')
assert v.shape == (1, 4, 12, 12) and k.shape == (1, 4, 12, 16), (v.shape, k.shape)
assert (k[0, :, :, 8:] == k[0, :1, :, 8:]).all()"
  expect_error "$m run --save-weights refuses a latent layer, saying why" "is multi-head latent attention" \
    "$BIN" run --model "$T/$m" --text "ab" --layer 1 --dump "$T/e_$m" --save-weights "$T/e_$m.safetensors"
  grep -q "h = 4, no K/V heads: one latent of r + d_r = " <<<"$out" \
    && ok "$m run --model: the summary says what a latent layer caches instead of K/V heads" || bad "run $m: $out"
  expect_ok "$m export --model writes a latent layer's stage as the forward recorded it" \
    "$BIN" export --model "$T/$m" --text-file "$T/${m}_s0.txt" --layer 1 --stage weights --head 2 --out "$T/e_$m.png"
  expect_error "$m export --weight refuses a latent layer, saying why" "is multi-head latent attention" \
    "$BIN" export --model "$T/$m" --text "ab" --layer 1 --weight w_q --out "$T/w_$m.png"
  # circuits --model on a latent layer: each head's key its content part and the shared rotary key (the note says so).
  out="$("$BIN" circuits --model "$T/$m" --text "abab" --layer 1 --head 0 2>&1)" \
    && grep -q "Multi-head latent attention: each head's key" <<<"$out" \
    && ok "$m circuits --model reads a latent layer's heads and says how" || bad "circuits $m: $out"
done
out="$("$BIN" info --model "$T/deepseek_v3" 2>&1)"
grep -q "cache per token .*24 numbers per token and layer (r + d_r), against 112 for MHA" <<<"$out" \
  && grep -qE "absorbed form .* by at most [0-9.e-]+, outputs by" <<<"$out" \
  && ok "info --model: the latent cache beside MHA's, and the absorbed form's check" || bad "info deepseek_v3: $out"

# Finite weights too large for float32: predict and bench say so (stderr, and --json's non_finite).
cp -r "$T/gpt2" "$T/gpt2_huge"
"$PY" -c "
import json, struct, sys; sys.path.insert(0, '$(dirname "$0")/../../scripts')
import numpy as np, mhascope_model
t, _ = mhascope_model.read_safetensors('$T/gpt2_huge/model.safetensors')
arrays = {k: (v.numpy() * (1e30 if k.startswith('h.0.') else 1)).astype(np.float32) for k, v in t.items()}
header, blob = {}, b''
for k, a in arrays.items():
    header[k] = {'dtype': 'F32', 'shape': list(a.shape), 'data_offsets': [len(blob), len(blob) + a.nbytes]}
    blob += a.tobytes()
h = json.dumps(header).encode(); h += b' ' * (-len(h) % 8)
open('$T/gpt2_huge/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + blob)"
out="$("$BIN" predict --model "$T/gpt2_huge" --text-file "$T/s0.txt" --json "$T/p_huge.json" 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q "warning: layer 0's attention output: .* NaN or ±Inf" <<<"$out" \
  && grep -q '"non_finite": "layer 0' "$T/p_huge.json" && ok "predict says where float32 overflowed" || bad "predict overflow: rc=$rc $out"
grep -q '"non_finite": null' "$T/p_gpt2.json" && ok "a clean predict has non_finite null" || bad "p_gpt2.json non_finite"
out="$("$BIN" bench --model "$T/gpt2_huge" --tokens 4 --repeat 1 2>&1)"
grep -q "warning: layer 0's attention output" <<<"$out" && ok "bench says so too" || bad "bench overflow: $out"
# A text that is not valid UTF-8: read with U+FFFD, and said with the first offset (the fixtures'
# byte tokenizer gives U+FFFD's bytes ids past V = 100, so here it is said with that refusal; the
# warning of a text that tokenizes is tests/model's ModelText test).
printf 'ab\xffcd' > "$T/bad_utf8.txt"
for cmd in "predict" "run --dump $T/d_utf8"; do
  expect_error "$cmd: the text is not valid UTF-8, said with the first offset" \
    "is not valid UTF-8: its ill-formed bytes are read as U+FFFD, the replacement character (the first at byte 2)" \
    "$BIN" $cmd --model "$T/gpt2" --text-file "$T/bad_utf8.txt"
done
# The lens runs 128 positions at a time: 200 tokens (RoPE has no position table, so a copy of the
# llama folder may declare 300 positions) cross a block boundary.
cp -r "$T/llama_gqa" "$T/llama_long" && sed -i 's/"max_position_embeddings": 64/"max_position_embeddings": 300/' "$T/llama_long/config.json"
"$PY" -c "import random; random.seed(1); print(''.join(random.choice('abcdefgh ') for _ in range(200)), end='')" > "$T/t200.txt"
"$BIN" predict --model "$T/llama_long" --text-file "$T/t200.txt" --top 1 --json "$T/p_long.json" >/dev/null 2>&1
check "logit lens over 200 tokens (two blocks): the last layer is the model's own top-1" "
d = json.load(open('$T/p_long.json')); assert d['T'] == 200
assert [c['id'] for c in d['logit_lens'][-1]] == [t[0]['id'] for t in d['predictions']]"
check "top-1 probability = softmax of the reference logits" "
d = json.load(open('$T/p_gpt2.json')); r = np.load('$R/gpt2/s0_logits.npy').astype(np.float64)
p = np.exp(r - r.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
got = np.array([t[0]['probability'] for t in d['predictions']]); assert abs(got - p.max(-1)).max() < 1e-5"
check "logit lens: each cell's probability, at least the one it gives the final top-1; the last layer's is the model's" "
d = json.load(open('$T/p_gpt2.json'))
for row in d['logit_lens']:
    assert all(0 < c['probability'] <= 1 and c['final_top_probability'] <= c['probability'] + 1e-12 for c in row), row
for c, t in zip(d['logit_lens'][-1], d['predictions']):
    assert abs(c['probability'] - t[0]['probability']) < 1e-5 and abs(c['final_top_probability'] - c['probability']) < 1e-12, (c, t[0])"
"$BIN" predict --model "$T/gpt2" --text-file "$T/s0.txt" --top 1 > "$T/p_table.txt" 2>&1
check "predict's lens table: each layer's top-1 with its probability, as in --json" "
d = json.load(open('$T/p_gpt2.json'))
lines = open('$T/p_table.txt', encoding='utf-8').read().split('Logit lens')[1].splitlines()
rows = [l for l in lines if l.strip()[:1].isdigit()]
assert len(rows) == 12, rows
for t, line in enumerate(rows):
    probs = [float(w) for w in line.split()[2:] if w.count('.') == 1 and w.replace('.', '').isdigit()]
    want = [d['logit_lens'][l][t]['probability'] for l in range(2)]
    assert len(probs) >= 2 and all(abs(p - w) <= 5e-4 + 1e-9 for p, w in zip(probs[-2:], want)), (line, want)"
out="$("$BIN" predict --model "$T/gpt2" --text "a b" --top 2 2>&1)"
grep -q "^ *1 ␣  *0  →" <<<"$out" && grep -q "Logit lens" <<<"$out" && grep -q "layer 1" <<<"$out" \
  && ok "predict prints the space token as '␣' with its id, and the lens table" || bad "predict table: $out"

# --- one clear line for each refusal ------------------------------------------------------------
"$PY" -c "print('x' * 33, end='')" > "$T/long.txt"
expect_error "more tokens than n_positions" "is 33 tokens, more than the model's 32 positions (n_positions" \
  "$BIN" run --model "$T/gpt2" --text-file "$T/long.txt" --dump "$T/e1"
"$PY" -c "print('x' * 64, end='')" > "$T/long64.txt"
expect_error "BOS counts toward max_position_embeddings" "is 65 tokens (with the BOS), more than the model's 64 positions (max_position_embeddings" \
  "$BIN" predict --model "$T/llama_bos" --text-file "$T/long64.txt"
expect_error "empty --text" "--text is empty: enter at least one token" "$BIN" run --model "$T/gpt2" --text "" --dump "$T/e2"
: > "$T/empty.txt"
expect_error "empty --text-file" "is empty: enter at least one token" "$BIN" predict --model "$T/gpt2" --text-file "$T/empty.txt"
expect_error "no text at all" "--model needs the text: --text" "$BIN" predict --model "$T/gpt2"
expect_error "folder without a tokenizer" "holds no tokenizer: neither tokenizer.json nor vocab.json + merges.txt" \
  "$BIN" run --model "$M/gpt2" --text "ab" --dump "$T/e3"
expect_error "options the folder decides" "drop --heads, --positions" \
  "$BIN" run --model "$T/gpt2" --text "ab" --heads 2 --positions rope --dump "$T/e4"
expect_error "--layer outside the model" "--layer 2 is outside the model's 2 layers (0 .. 1" \
  "$BIN" run --model "$T/gpt2" --text "ab" --layer 2 --dump "$T/e5"
expect_error "run --model without --dump" "--dump is required" "$BIN" run --model "$T/gpt2" --text "ab"
expect_error "--text-file without --model" "--text-file needs --model DIR" "$BIN" run --text-file "$T/s0.txt" --dump "$T/e6"
expect_error "--text and --text-file" "--text and --text-file both give the text" \
  "$BIN" run --model "$T/gpt2" --text "ab" --text-file "$T/s0.txt" --dump "$T/e7"
expect_error "a token outside the model's vocabulary" "outside the model's vocabulary of 100" \
  "$BIN" predict --model "$T/gpt2" --text "é"
expect_error "--top above V" "--top 101 is more than the model's vocabulary of 100" "$BIN" predict --model "$T/gpt2" --text "ab" --top 101
expect_error "--top 0" "--top" "$BIN" predict --model "$T/gpt2" --text "ab" --top 0
"$PY" -c "print('ab' * 125, end='')" > "$T/t250.txt"
expect_error "--memory-budget reaches the model's forward" "more than the memory budget of 1.0 MiB" \
  "$BIN" run --model "$T/llama_long" --text-file "$T/t250.txt" --memory-budget 1 --dump "$T/e8"
[ ! -e "$T/e8" ] && ok "a refused dump writes nothing" || bad "e8 was written"
echo keep > "$T/keep.json"
expect_error "--json exists" "already exists; add --force" "$BIN" predict --model "$T/gpt2" --text "ab" --json "$T/keep.json"
grep -qx keep "$T/keep.json" && ok "--json: the existing file is untouched" || bad "keep.json changed"
expect_ok "--json --force replaces it" "$BIN" predict --model "$T/gpt2" --text "ab" --json "$T/keep.json" --force
expect_error "--dump over a folder of the user's" "is not part of an mhascope dump" \
  "$BIN" run --model "$T/gpt2" --text "ab" --dump "$T/gpt2"
[ -f "$T/gpt2/config.json" ] && ok "the model folder is untouched" || bad "model folder changed"
expect_error "decode --dump into the model folder" "is not part of a decode dump" \
  "$BIN" decode --d-model 8 --heads 2 --dump "$T/gpt2"
[ ! -e "$T/gpt2/output.npy" ] && ok "decode wrote nothing into the model folder" || bad "decode wrote into the model folder"

echo "$fails failure(s)"
[ $fails -eq 0 ]
