#!/usr/bin/env bash
# `circuits --model DIR --text S --layer L --head H` (app/cli/circuits_command.cpp) on copies of the
# fixture model folders with a byte-level tokenizer (model_tokenizer.sh): the numbers of --json
# against the PyTorch reference that scripts/gen_model_fixtures.py wrote for the same tokens
# (tests/fixtures/models/circuits), --export-dir's files against --json, GQA, and one line for each
# refusal — outputs never replace a file of the model folder or the text.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
PY=/usr/bin/python3
source "$(dirname "$0")/model_tokenizer.sh"
M="$FIX/models"; C="$M/circuits"
for m in gpt2 llama_gqa; do cp -r "$M/$m" "$T/$m" && mktok "$T/$m"; done
mktok "$T/llama_gqa" bos
# The reference's tokens as text (byte-level: id = byte - 32), so the command tokenizes them back.
"$PY" -c "import json, sys; sys.stdout.write(''.join(chr(32 + i) for i in json.load(open('$C/gpt2_l0_h1.json'))['tokens']))" > "$T/ref.txt"
check() {  # check NAME PYTHON...: ok when it exits 0
  local name="$1"; shift
  local out; out="$("$PY" -c "import json, numpy as np, sys
$*" 2>&1)" && ok "$name" || bad "$name: $out"
}

# --- the numbers: --json against the reference of the same tokens, layer and head ----------------
out="$("$BIN" circuits --model "$T/gpt2" --text-file "$T/ref.txt" --layer 0 --head 1 --json "$T/g.json" 2>&1)" \
  && ok "gpt2: circuits --model --layer 0 --head 1" || bad "gpt2 circuits: $out"
grep -q "Who reads layer 0 head 1 (every head of layers 1 .. 1): 4 pairs" <<<"$out" && ok "the report names the readers" \
  || bad "report: $out"
grep -q "Copying score of every head" <<<"$out" && grep -q "Attention rollout of the text through 2 layers" <<<"$out" \
  && ok "the report has the copying table and the rollout" || bad "report: $out"
check "gpt2: token ids, copying, composition, token-space matrices and rollout equal the reference" "
g = json.load(open('$T/g.json')); r = json.load(open('$C/gpt2_l0_h1.json'))
assert g['token_ids'] == r['token_ids'], (g['token_ids'], r['token_ids'])
assert np.allclose(g['copying'], r['copying'], atol=1e-4), 'copying'
got = [[p['from'][0], p['from'][1], p['to'][0], p['to'][1], p['q'], p['k'], p['v']] for p in g['read_by']]
assert np.allclose(got, r['read_by'], atol=1e-4), (got, r['read_by'])
assert g['reads'] == [] and 0 < g['baseline'] < 1
assert np.allclose(g['qk_tokens'], np.load('$C/gpt2_l0_h1_qk_tokens.npy'), rtol=1e-4, atol=1e-4), 'qk_tokens'
assert np.allclose(g['ov_tokens'], np.load('$C/gpt2_l0_h1_ov_tokens.npy'), rtol=1e-4, atol=1e-4), 'ov_tokens'
assert np.allclose(g['rollout']['matrix'], np.load('$C/gpt2_l0_h1_rollout.npy'), atol=1e-5), 'rollout'
"

# --- virtual heads: every pair's copying against the reference's V x V spectrum; --pair ----------
check "gpt2: the virtual heads of every pair and the top ones equal the reference" "
g = json.load(open('$T/g.json')); r = json.load(open('$C/gpt2_l0_h1.json'))
assert np.allclose([p['virtual_copying'] for p in g['read_by']], r['read_by_virtual'], atol=1e-4), 'virtual'
top = sorted(g['read_by'], key=lambda p: -p['v'])[:3]
assert [p['to'] for p in g['virtual_heads']] == [p['to'] for p in top], g['virtual_heads']
assert g['pair'] is None
"
grep -qE "^Virtual heads through layer 0 head 1, the pairs V-composition ranks first:" <<<"$out" && ok "the report lists the virtual heads" \
  || bad "virtual heads report: $out"
out="$("$BIN" circuits --model "$T/gpt2" --text-file "$T/ref.txt" --layer 1 --head 2 --pair 0.0,1.2 --json "$T/p.json" --export-dir "$T/pexp" 2>&1)" \
  && grep -qE "^The pair asked for: layer 0 head 0 → layer 1 head 2 through the values: copying [-+][0-9.]+ \(each alone: .*\); its E OV\^a OV\^b U over the text's 8 tokens: [0-9.]+ % raise their own logit most\.$" <<<"$out" \
  && ok "--pair 0.0,1.2: its virtual head in words" || bad "--pair: $out"
check "--pair: the virtual head's copying, token-space OV and diagonal equal the reference; its files are written" "
g = json.load(open('$T/p.json')); r = json.load(open('$C/gpt2_l1_h2.json')); p = g['pair']
assert r['virtual_pair'] == [0, 0, 1, 2] and p['from'] == [0, 0] and p['to'] == [1, 2], p['from']
assert abs(p['virtual_copying'] - r['virtual_copying']) < 1e-4, (p['virtual_copying'], r['virtual_copying'])
assert np.allclose(p['ov_tokens'], np.load('$C/gpt2_l1_h2_virtual_ov_tokens.npy'), rtol=1e-4, atol=1e-4), 'ov_tokens'
assert abs(p['diagonal'] - r['virtual_diagonal']) < 1e-9, (p['diagonal'], r['virtual_diagonal'])
assert np.allclose([q['virtual_copying'] for q in g['reads']], r['reads_virtual'], atol=1e-4), 'reads'
assert np.allclose(np.load('$T/pexp/virtual_ov_tokens_l0_h0_l1_h2.npy'), p['ov_tokens'])
v = np.load('$T/pexp/virtual_heads.npy'); assert v.shape == (4, 6) and np.allclose(v[:, 5], r['reads_virtual'], atol=1e-4)
"
[ -s "$T/pexp/virtual_ov_tokens_l0_h0_l1_h2.png" ] && ok "--pair: its picture" || bad "no virtual_ov_tokens picture"
expect_error "--pair past the last layer names the layer and the count" "layer 2 is outside the model's 2 layers (0 .. 1)" \
  "$BIN" circuits --model "$T/gpt2" --text abc --pair 0.0,2.0
expect_error "--pair past the heads names the head" "head 4 is outside the model's 4 heads per layer (0 .. 3)" \
  "$BIN" circuits --model "$T/gpt2" --text abc --pair 0.4,1.0
expect_error "--pair with a later head first" "must be in an earlier layer" "$BIN" circuits --model "$T/gpt2" --text abc --pair 1.0,0.0
expect_error "--pair in a wrong form" "--pair '0.0;1.1' is not two heads" "$BIN" circuits --model "$T/gpt2" --text abc --pair "0.0;1.1"

# --- GQA, --export-dir, the files against --json ------------------------------------------------
expect_ok "llama GQA: circuits --layer 1 --head 3 --json --export-dir" \
  "$BIN" circuits --model "$T/llama_gqa" --text "the cat sat. the cat sat." --layer 1 --head 3 --json "$T/l.json" --export-dir "$T/exp"
check "llama: every earlier head is read, none reads the last layer; files equal --json" "
g = json.load(open('$T/l.json'))
assert [p['from'] for p in g['reads']] == [[0, h] for h in range(4)] and all(p['to'] == [1, 3] for p in g['reads'])
assert g['read_by'] == [] and np.array(g['copying']).shape == (2, 4)
n = len(g['token_ids']); assert n == len(set('the cat sat.')) + 1, n  # distinct characters + the BOS
assert np.array(g['qk_tokens']).shape == (n, n) and np.allclose(np.load('$T/exp/qk_tokens_l1_h3.npy'), g['qk_tokens'])
reads = np.load('$T/exp/composition_reads.npy'); assert reads.shape == (4, 7)
assert np.allclose(reads[:, 4:], [[p['q'], p['k'], p['v']] for p in g['reads']])
assert np.allclose(np.load('$T/exp/copying.npy'), g['copying'], atol=1e-6)
T = len('the cat sat. the cat sat.') + 1  # + the BOS
assert np.load('$T/exp/qk_l1_h3.npy').shape == (32, 32) and np.load('$T/exp/rollout.npy').shape == (T, T)
"
for f in qk_l1_h3.png ov_l1_h3.png qk_tokens_l1_h3.png ov_tokens_l1_h3.png composition_q_l1_h3.png composition_k_l1_h3.png \
         composition_v_l1_h3.png rollout.png; do
  [ -s "$T/exp/$f" ] || bad "--export-dir lacks $f"
done
ok "--export-dir holds the head's pictures, the composition maps and the rollout"
expect_ok "an earlier export folder is written again" \
  "$BIN" circuits --model "$T/llama_gqa" --text "abc" --layer 0 --head 0 --export-dir "$T/exp"

# --- refusals ---------------------------------------------------------------------------------------
expect_error "a layer out of range" "layer 2" "$BIN" circuits --model "$T/gpt2" --text "abc" --layer 2
expect_error "a head out of range" "head 4" "$BIN" circuits --model "$T/gpt2" --text "abc" --head 4
expect_error "--layer without --model" "--layer requires --model" "$BIN" circuits --checkpoint "$T/x.safetensors" --layer 1
expect_error "--model with --checkpoint" "excludes" "$BIN" circuits --model "$T/gpt2" --checkpoint "$T/x.safetensors" --text a
expect_error "neither --model nor --checkpoint" "--checkpoint F (a training checkpoint) or --model DIR" "$BIN" circuits
expect_error "no text" "--text" "$BIN" circuits --model "$T/gpt2"
cp "$T/gpt2/config.json" "$T/config.keep"
expect_error "--json onto the model's config.json, even with --force" "inside the model folder" \
  "$BIN" circuits --model "$T/gpt2" --text abc --json "$T/gpt2/config.json" --force
expect_error "--json onto the --text-file" "same file as --text-file" \
  "$BIN" circuits --model "$T/gpt2" --text-file "$T/ref.txt" --json "$T/ref.txt" --force
cmp -s "$T/config.keep" "$T/gpt2/config.json" && ok "config.json untouched" || bad "config.json changed"
expect_error "an existing --json without --force" "already exists" "$BIN" circuits --model "$T/gpt2" --text abc --json "$T/g.json"
expect_error "--export-dir the model folder" "is inside the model folder" \
  "$BIN" circuits --model "$T/gpt2" --text abc --export-dir "$T/gpt2"
expect_error "a budget too small" "budget" "$BIN" circuits --model "$T/gpt2" --text abc --memory-budget 1
echo '{}' > "$T/gpt2/generation_config.json"  # a file of the folder no command reads: still the user's
expect_error "--json onto any file of the model folder" "inside the model folder" \
  "$BIN" circuits --model "$T/gpt2" --text abc --json "$T/gpt2/generation_config.json" --force
[ "$(cat "$T/gpt2/generation_config.json")" = "{}" ] && ok "generation_config.json untouched" || bad "generation_config.json changed"
expect_error "--json named like a file --export-dir writes" "is a file --export-dir" \
  "$BIN" circuits --model "$T/gpt2" --text abc --export-dir "$T/exp" --json "$T/exp/rollout.npy"
cp "$T/ref.txt" "$T/exp/copying.npy"
expect_error "--text-file named like a file --export-dir writes" "would destroy the text" \
  "$BIN" circuits --model "$T/gpt2" --text-file "$T/exp/copying.npy" --export-dir "$T/exp"
cmp -s "$T/ref.txt" "$T/exp/copying.npy" && ok "the text file untouched" || bad "the text file was replaced"
rm -f "$T/exp/copying.npy"
expect_error "an --export-dir that cannot be made fails before computing, with no --json" "cannot create folder" \
  "$BIN" circuits --model "$T/gpt2" --text abc --json "$T/nojson.json" --export-dir /proc/mhascope-no-such
[ ! -e "$T/nojson.json" ] && ok "no --json written when the command fails" || bad "--json written by a failed command"
# A text above the rollout's 1024 tokens: no rollout, and an earlier export's rollout files go.
cp -r "$T/llama_gqa" "$T/long" && sed -i 's/"max_position_embeddings": 64/"max_position_embeddings": 2048/' "$T/long/config.json"
head -c 1100 /dev/zero | tr '\0' 'a' > "$T/long.txt"
[ -e "$T/exp/rollout.npy" ] || bad "the earlier export has no rollout to replace"
out="$("$BIN" circuits --model "$T/long" --text-file "$T/long.txt" --layer 1 --head 1 --export-dir "$T/exp" 2>&1)" \
  && grep -q "Attention rollout: not computed" <<<"$out" && ok "no rollout above 1024 tokens, said so" || bad "long text: $out"
[ ! -e "$T/exp/rollout.npy" ] && [ ! -e "$T/exp/rollout.png" ] && ok "an earlier export's rollout removed, not passed off as this text's" \
  || bad "stale rollout files kept"

[ "$fails" -eq 0 ] && echo "all circuits --model checks passed" || { echo "$fails failed"; exit 1; }
