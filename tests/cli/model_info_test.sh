#!/usr/bin/env bash
# `mhascope info --model DIR` on the fixture model folders (tests/fixtures/models, made by
# scripts/gen_model_fixtures.py): architecture, sizes, parameter count, KV-cache bytes per token;
# a folder that cannot be opened and options the folder decides are one clear line each.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
M="$FIX/models"

out="$("$BIN" info --model "$M/gpt2")"
grep -q "architecture  *gpt2" <<<"$out" && grep -q "heads h  *4 (d_k = 8)" <<<"$out" \
  && grep -q "positions  *learned, 32" <<<"$out" && ok "gpt2: architecture and sizes" || bad "gpt2 info: $out"
# wte 3200 + wpe 1024 + ln_f 64 + 2 layers x 12,204 = 29,696 (the file's tensors without the mask buffers)
grep -q "parameters  *29,696" <<<"$out" && ok "gpt2: parameter count" || bad "gpt2 parameters: $out"
# 2 (K and V) x L 2 x N 4 x d_k 8 = 128 floats
grep -q "KV cache  *512 B per token (2 \* L \* N \* d_k = 128 floats" <<<"$out" && ok "gpt2: KV-cache bytes" || bad "gpt2 kv: $out"

out="$("$BIN" info --model "$M/llama_gqa")"
grep -q "K/V heads N  *2 (grouped-query: 2 query heads per K/V head)" <<<"$out" && grep -q "unembedding  *lm_head" <<<"$out" \
  && ok "llama: grouped K/V heads, lm_head" || bad "llama info: $out"
grep -q "KV cache  *256 B per token" <<<"$out" && grep -q "parameters  *21,920" <<<"$out" \
  && ok "llama: KV cache halves with N = h/2; parameters" || bad "llama kv: $out"
out="$("$BIN" info --model "$M/llama_sharded/config.json")"
grep -q "F32 in 2 files" <<<"$out" && grep -q "parameters  *21,920" <<<"$out" && ok "sharded folder through its config.json" \
  || bad "sharded: $out"
out="$("$BIN" info --model "$M/mistral")"
grep -q "sliding window  *W = 4" <<<"$out" && ok "mistral: window" || bad "mistral: $out"
out="$("$BIN" info --model "$M/qwen2")"
grep -q "attention biases  *q, k, v$" <<<"$out" && grep -q "tied to the token embedding" <<<"$out" && ok "qwen2: biases, tied" \
  || bad "qwen2: $out"
out="$("$BIN" info --model "$M/llama3_scaled")"
grep -q "RoPE theta 500000, rotate-half, llama3 scaling x8" <<<"$out" && ok "llama3 rope scaling" || bad "llama3: $out"
out="$("$BIN" info --model "$M/llama_gqa_bf16")"
grep -q "weights  *BF16 in 1 file" <<<"$out" && ok "bf16 dtype" || bad "bf16: $out"

expect_error "no such folder" "no such folder" "$BIN" info --model "$T/nothing"
mkdir -p "$T/empty"
expect_error "no config.json" "no config.json in the folder" "$BIN" info --model "$T/empty"
cp -r "$M/gpt2" "$T/bert" && sed -i 's/"model_type": "gpt2"/"model_type": "bert"/' "$T/bert/config.json"
expect_error "unknown model_type" "model_type 'bert' is not supported" "$BIN" info --model "$T/bert"
cp -r "$M/llama_sharded" "$T/shard" && rm "$T/shard/model-00002-of-00002.safetensors"
expect_error "missing shard" "model-00002-of-00002.safetensors: no such file" "$BIN" info --model "$T/shard"
expect_error "options the folder decides" "drop --heads" "$BIN" info --model "$M/gpt2" --heads 2 --text "a b"
expect_error "options the folder decides (summary only)" "drop --heads" "$BIN" info --model "$M/gpt2" --heads 2
expect_error "empty --model" "--model" "$BIN" info --model ""

echo "$fails failure(s)"
[ $fails -eq 0 ]
