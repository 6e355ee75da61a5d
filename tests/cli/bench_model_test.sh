#!/usr/bin/env bash
# `bench --model DIR`: the whole forward of a fixture model folder, with every layer's attention
# recorded, timed (text and --json), on seeded ids or a text; every refusal. Checks what is
# printed, never how fast it is.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
PY=/usr/bin/python3
source "$(dirname "$0")/model_tokenizer.sh"
M="$FIX/models"

# --- the text report -------------------------------------------------------------------------
out="$("$BIN" bench --model "$M/gpt2" --tokens 12 --repeat 2 2>&1)" || bad "bench --model gpt2: $out"
for want in "model: gpt2 $M/gpt2 (F32): L 2, d_model 32, h 4, N 4, V 100" "T = 12 seeded token ids (seed 1)" \
            "threads: 1;" "memory estimate of the forward:" "open (config.json" "first forward" \
            "forward with every layer's attention recorded: min " "over 2 runs" "layers' norm + MLP"; do
  grep -qF -- "$want" <<<"$out" && ok "text report: $want" || bad "text report lacks '$want': $out"
done

# --- --json: one object with the sizes, every run and the parts -------------------------------
"$BIN" bench --model "$M/llama_gqa" --tokens 20 --repeat 3 --threads 2 --json > "$T/b.json" 2>&1 \
  || bad "bench --model --json: $(cat "$T/b.json")"
"$PY" - "$T/b.json" <<'PYEOF' && ok "--json: sizes, 3 runs, min <= median, the parts" || bad "--json content: $(cat "$T/b.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["architecture"], j["layers"], j["heads"], j["kv_heads"], j["vocab"], j["tokens"]) == ("llama", 2, 4, 2, 100, 20), j
assert j["threads"] == 2 and j["repeat"] == 3 and len(j["forward_ms"]["runs"]) == 3, j
f = j["forward_ms"]
assert 0 < f["min"] <= f["median"] <= max(f["runs"]), f
assert all(j["parts_median_ms"][k] > 0 for k in ("attention", "mlp", "logits")), j
assert j["token_source"] == "seeded" and j["seed"] == 1 and j["memory_estimate_bytes"] > 0, j
PYEOF

# --- a text through the folder's tokenizer (one token a byte, BOS first when the template asks) ---
cp -r "$M/gpt2" "$T/gpt2" && mktok "$T/gpt2"
cp -r "$M/llama_gqa" "$T/llama" && mktok "$T/llama" bos
out="$("$BIN" bench --model "$T/gpt2" --text "ab|c" --repeat 1 2>&1)" || bad "bench --model --text: $out"
grep -qF "T = 4 from the text" <<<"$out" && ok "--text: 4 tokens, '|' is text" || bad "--text tokens: $out"
printf 'x\ty\n' > "$T/t.txt"
out="$("$BIN" bench --model "$T/llama" --text-file "$T/t.txt" --repeat 1 --json 2>&1)" || bad "--text-file: $out"
"$PY" -c "import json,sys; j=json.loads(sys.argv[1]); assert j['tokens'] == 5 and j['token_source'] == 'text', j" "$out" \
  && ok "--text-file: 4 bytes + the BOS = 5 tokens" || bad "--text-file tokens: $out"

# --- with --layer L: that layer's attention, timed as any other model source (no whole forward) ---
out="$("$BIN" bench --model "$T/gpt2" --text "abc" --layer 1 --repeat 1 2>&1)" || bad "bench --model --layer: $out"
grep -qF "ratio-to-gemm" <<<"$out" && ! grep -qF "every layer's attention recorded" <<<"$out" \
  && ok "--layer 1: the layer's attention against the GEMM" || bad "--layer 1: $out"

# --- the same seed gives the same ids: the forward's estimate and tokens agree across runs --------
a="$("$BIN" bench --model "$M/gpt2" --tokens 7 --seed 5 --repeat 1 --json 2>&1)"
"$PY" -c "import json,sys; j=json.loads(sys.argv[1]); assert j['seed'] == 5 and j['tokens'] == 7, j" "$a" \
  && ok "--seed is reported" || bad "--seed: $a"

# --- refusals --------------------------------------------------------------------------------------
expect_error "no tokens" "bench --model needs the tokens: --tokens T (seeded token ids)" \
  "$BIN" bench --model "$M/gpt2"
expect_error "both --text and --tokens" "--text/--text-file and --tokens both give the tokens; keep one" \
  "$BIN" bench --model "$T/gpt2" --text "ab" --tokens 3
expect_error "--tokens past GPT-2's n_positions" "--tokens 33 is more than the model's 32 positions (n_positions in $M/gpt2/config.json)" \
  "$BIN" bench --model "$M/gpt2" --tokens 33
# Refused before any id is made: under a 1 GiB address-space limit, a billion ids (4 GB) would fail otherwise.
expect_error "--tokens 10^9 refused before the ids are made" "--tokens 1000000000 is more than the model's 32 positions" \
  bash -c 'ulimit -v 1048576; exec "$@"' _ "$BIN" bench --model "$M/gpt2" --tokens 1000000000
expect_error "--tokens 0" "--tokens must be at least 1 with --model, got 0" \
  "$BIN" bench --model "$M/gpt2" --tokens 0
expect_error "options the folder decides" "bench --model takes the sizes, positions and weights from the folder's config.json and safetensors; drop --heads, --mask, --rounds" \
  "$BIN" bench --model "$M/gpt2" --tokens 4 --heads 2 --mask causal --rounds 2
expect_error "--torch points at the script" "drop --torch (scripts/bench_model.py" \
  "$BIN" bench --model "$M/gpt2" --tokens 4 --torch
expect_error "--repeat 0" "--repeat must be at least 1, got 0" "$BIN" bench --model "$M/gpt2" --tokens 4 --repeat 0
expect_error "memory budget" "more than the memory budget of 1.0 MiB (raise it with --memory-budget MiB)" \
  "$BIN" bench --model "$M/llama3_scaled" --tokens 64 --memory-budget 1
expect_error "no tokenizer for --text" "holds no tokenizer" "$BIN" bench --model "$M/gpt2" --text "ab"
expect_error "a folder that is not a model" "config.json" "$BIN" bench --model "$T" --tokens 4

exit $((fails > 0))
