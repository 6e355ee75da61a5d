#!/usr/bin/env bash
# End-to-end checks of attention as today's models run it: --kv-heads, --positions rope|alibi,
# --rope-base/--rope-style, --window/--sinks through info, run, bench and decode; PyTorch's fixtures
# through --weights with the separate q/k/v/o_proj names; every bad combination one clear line.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"

# The float32 payloads (the last N*4 bytes) of two .npy files agree within float rounding.
close_npy() {
  local a="$1" b="$2" n="$3"
  paste <(tail -c $((n * 4)) "$a" | od -An -v -f -w4) <(tail -c $((n * 4)) "$b" | od -An -v -f -w4) |
    awk '{d = $1 - $2; if (d < 0) d = -d; tol = 2e-5 + 2e-4 * ($2 < 0 ? -$2 : $2); if (d > tol) bad++} END {exit bad > 0}'
}

# --- info --------------------------------------------------------------------------------------
out="$("$BIN" info --d-model 16 --heads 4 --kv-heads 2 --positions rope --window 3 --sinks 1 --mask causal)"
grep -q "kv heads N  *2 (grouped-query" <<<"$out" && ok "info: kv heads" || bad "info kv heads: $out"
grep -q "total without bias  *768  *2·d_model² + 2·d_model·N·d_k$" <<<"$out" \
  && grep -q "total with bias  *816  *2·d_model² + 2·d_model·N·d_k + 2·d_model + 2·N·d_k$" <<<"$out" \
  && ok "info: GQA parameter total" || bad "info gqa params: $out"
grep -q "KV cache  *64 B per token and layer" <<<"$out" && ok "info: KV-cache bytes per token" || bad "info kv cache: $out"
grep -q "k_heads  *(1, 2, 9, 4)  *(B, N, T_k, d_k)" <<<"$out" && grep -q "k_view  *(1, 9, 2, 4)  *(B, T_k, N, d_k)" <<<"$out" \
  && ok "info: K/V heads are N" || bad "info k_heads: $out"
grep -q "q_rotated  *(1, 4, 9, 4)" <<<"$out" && grep -q "kv_groups  *(1, 4, 2)" <<<"$out" \
  && grep -q "window_mask  *(1, 9, 9)" <<<"$out" && ok "info: the variants' stages" || bad "info stages: $out"
grep -q "RoPE  *base 10000, rotate-half" <<<"$out" && ok "info: RoPE convention" || bad "info rope: $out"
grep -q "sliding window  *W = 3, sinks S = 1" <<<"$out" && ok "info: window" || bad "info window: $out"
# Every count `info` prints against the first-principles count of the weight matrices' entries (the
# lessons, the quiz and the status line are checked against the same count in
# tests/core/lesson_numbers_test.cpp): W_q d_model·h·d_k, W_k and W_v d_model·N·d_k, W_o h·d_k·d_model,
# one bias per output feature; projection FLOPs 2·(T·(W_q + W_o) + T·(W_k + W_v)), attention 4·h·T²·d_k.
thousands() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }  # 2640 -> 2,640
for cfg in "32 8 2 1" "32 8 8 0" "32 16 2 1" "48 12 3 0" "12 3 1 1"; do
  read -r d h n b <<<"$cfg"
  dk=$((d / h)); T=5
  w=$((d * h * dk + 2 * d * n * dk + h * dk * d)); biases=$((h * dk + 2 * n * dk + d))
  holds=$w; [ "$b" = 1 ] && holds=$((w + biases))
  flag=--no-bias; [ "$b" = 1 ] && flag=""
  o="$("$BIN" info --text "a b c d e" --d-model "$d" --heads "$h" --kv-heads "$n" $flag)"
  on=off; [ "$b" = 1 ] && on=on
  proj=$(awk -v T=$T -v q=$((d * h * dk + h * dk * d)) -v k=$((2 * d * n * dk)) 'BEGIN {printf "%.4g", 2 * (T * q + T * k)}')
  attn=$(awk -v T=$T -v h=$h -v dk=$dk 'BEGIN {printf "%.4g", 4 * h * T * T * dk}')
  grep -q "W_k (d_model x N\*d_k)  *$(thousands $((d * n * dk)))\$" <<<"$o" \
    && grep -q "total without bias  *$(thousands $w) " <<<"$o" \
    && grep -q "total with bias  *$(thousands $((w + biases))) " <<<"$o" \
    && grep -q "this layer holds (biases $on)  *$(thousands $holds)\$" <<<"$o" \
    && grep -q "projections (Q, K, V, W_o)  *$proj\$" <<<"$o" && grep -q "attention (QK^T, AV)  *$attn\$" <<<"$o" \
    && grep -q "KV cache  *$((2 * n * dk * 4)) B per token and layer" <<<"$o" \
    && ok "info: counts of d_model $d, h $h, N $n, bias $b" || bad "info counts d $d h $h n $n b $b: $o"
done
out="$("$BIN" info --positions alibi --heads 2 --d-model 8)"
grep -q "ALiBi slopes m_1..m_h  *0.0625, 0.00390625" <<<"$out" && grep -q "position_bias  *(1, 2, 9, 9)" <<<"$out" \
  && ok "info: ALiBi slopes and bias" || bad "info alibi: $out"
out="$("$BIN" info)"
grep -q "q_rotated\|kv_groups\|window_mask\|position_bias" <<<"$out" && bad "plain MHA lists variant stages" \
  || ok "plain MHA lists no variant stage"

# --- run --dump against PyTorch (separate q/k/v/o_proj names, GQA + RoPE + window + sinks + padding)
C="$FIX/torch/gqa_rope_window_sinks_padding"
expect_ok "run GQA+RoPE+window+sinks with torch weights" "$BIN" run --query "$C/query.npy" \
  --key-padding-mask "$C/key_padding_mask.npy" --heads 4 --positions rope --window 3 --sinks 1 --mask causal \
  --weights "$C/weights.safetensors" --dump "$T/gqa"
[ "$(ls "$T/gqa"/*.npy | wc -l)" -eq 20 ] && ok "dump: 16 stages + rotated q, k + group map + window mask" || bad "dump: $(ls "$T/gqa")"
close_npy "$T/gqa/output.npy" "$C/output.npy" $((2 * 9 * 16)) && ok "GQA+RoPE output == PyTorch" || bad "GQA+RoPE output"
close_npy "$T/gqa/k_rotated.npy" "$C/k_rotated.npy" $((2 * 2 * 9 * 4)) && ok "rotated keys == PyTorch" || bad "k_rotated"
grep -q '"kv_heads": 2' "$T/gqa/trace.json" && ok "trace.json: kv_heads" || bad "trace.json kv_heads"
# The file decides N; an option that agrees is accepted, one that contradicts is refused.
expect_ok "--kv-heads agreeing with the file" "$BIN" info --query "$C/query.npy" --heads 4 --kv-heads 2 \
  --weights "$C/weights.safetensors"
expect_error "--kv-heads contradicting the file" "holds N = 2 K/V heads (k_proj.weight 8 rows = N*d_k, d_k = 4), but --kv-heads is 4" \
  "$BIN" info --query "$C/query.npy" --heads 4 --kv-heads 4 --weights "$C/weights.safetensors"
expect_error "in_proj names with N != h" "grouped K/V heads need the separate q_proj/k_proj/v_proj/o_proj names" \
  "$BIN" info --query "$FIX/torch/self_small/query.npy" --heads 2 --kv-heads 1 --weights "$FIX/torch/self_small/weights.safetensors"
A="$FIX/torch/alibi_causal_h6_padding"
expect_ok "run ALiBi" "$BIN" run --query "$A/query.npy" --key-padding-mask "$A/key_padding_mask.npy" --heads 6 \
  --positions alibi --mask causal --weights "$A/weights.safetensors" --dump "$T/alibi"
close_npy "$T/alibi/output.npy" "$A/output.npy" $((2 * 6 * 12)) && ok "ALiBi output == PyTorch" || bad "ALiBi output"
# --save-weights writes the separate names when N != h, and they load back.
expect_ok "--save-weights with N != h" "$BIN" info --d-model 8 --heads 4 --kv-heads 2 --save-weights "$T/gqa.safetensors"
grep -q "k_proj.weight" "$T/gqa.safetensors" && ! grep -q "in_proj_weight" "$T/gqa.safetensors" \
  && ok "saved with q/k/v/o_proj names" || bad "saved names"
expect_ok "saved GQA weights load back" "$BIN" info --d-model 8 --heads 4 --weights "$T/gqa.safetensors"

# --- decode equals run --mask causal -------------------------------------------------------------
for opts in "--kv-heads 2" "--kv-heads 1 --positions rope" "--positions rope --rope-style interleaved --rope-base 500" \
            "--positions alibi" "--window 2 --sinks 1" "--kv-heads 2 --positions rope --window 3 --sinks 1 --pad-last 1 --text 'a b c d e f g|h i j'"; do
  eval "set -- $opts"
  "$BIN" run --d-model 16 --heads 4 --mask causal "$@" --dump "$T/full" >/dev/null 2>&1
  if "$BIN" decode --d-model 16 --heads 4 --prefill 2 "$@" --dump "$T/dec" > "$T/dec.txt" 2>&1; then
    n=$(( $(stat -c %s "$T/full/output.npy") / 4 - 32 ))
    close_npy "$T/dec/output.npy" "$T/full/output.npy" "$n" && ok "decode == run --mask causal ($opts)" \
      || bad "decode differs ($opts)"
  else
    bad "decode $opts: $(cat "$T/dec.txt")"
  fi
  rm -rf "$T/full" "$T/dec"
done
out="$("$BIN" decode --prefill 3 --kv-heads 1 --heads 2 --d-model 8)"
grep -q "prefill  *0..2  *96 " <<<"$out" && grep -q "t=5  *5  *192 " <<<"$out" && grep -q "total FLOPs:" <<<"$out" \
  && ok "decode prints cache bytes and FLOPs per step" || bad "decode table: $out"

# --- bench covers GQA and RoPE -------------------------------------------------------------------
out="$("$BIN" bench --d-model 16 --heads 4 --kv-heads 2 --positions rope --repeat 2 2>&1)"
grep -q "^kernels: " <<<"$out" && grep -q "^with this variant: " <<<"$out" && grep -q "kv_heads=2" <<<"$out" && ok "bench with GQA + RoPE" || bad "bench: $out"

# --- one clear line per bad combination ----------------------------------------------------------
expect_error "N does not divide h" "kv heads (N = 3) must divide heads (h = 4)" "$BIN" info --d-model 16 --heads 4 --kv-heads 3
expect_error "--kv-heads 0" "--kv-heads N must be at least 1, got 0" "$BIN" info --kv-heads 0
expect_error "RoPE with odd d_k" "RoPE turns pairs of features, so d_k must be even; d_k = d_model / h = 12 / 4 = 3" \
  "$BIN" info --d-model 12 --heads 4 --positions rope
expect_error "--window 0" "--window W must be at least 1, got 0" "$BIN" info --window 0
expect_error "--sinks without --window" "give a window W as well" "$BIN" info --sinks 2
expect_error "--sinks negative" "the number of sinks S must be 0 or more, got -1" "$BIN" info --window 2 --sinks -1
expect_error "--rope-base without rope" "--rope-base applies to RoPE only, but the positions are sinusoidal" \
  "$BIN" info --rope-base 500
expect_error "--rope-base 0" "the RoPE base must be a positive finite number" "$BIN" info --positions rope --rope-base 0
expect_error "--rope-style unknown" "--rope-style" "$BIN" info --positions rope --rope-style spiral
expect_error "--positions unknown" "--positions" "$BIN" info --positions xpos
expect_error "--no-positions with --positions" "--no-positions and --positions rope contradict each other" \
  "$BIN" info --no-positions --positions rope
expect_error "--positions sinusoidal with --query" "--positions sinusoidal cannot be used with --query" \
  "$BIN" info --query "$C/query.npy" --heads 4 --positions sinusoidal
expect_error "decode --prefill 0" "the prefill P must be from 1 to T (= 9), got 0" "$BIN" decode --prefill 0
expect_error "decode --mask none" "decode generates with a causal mask: --mask none cannot be used" \
  "$BIN" decode --mask none
expect_error "decode cross-attention" "decode runs self-attention" "$BIN" decode --kv-text "a b c"
printf 'x' > "$T/afile"
expect_error "decode --dump onto a file" "exists and is not a folder" "$BIN" decode --dump "$T/afile"
# decode --dump is one unit, and never writes into a folder of the user's (a model folder, say).
"$BIN" decode --d-model 8 --heads 2 --seed 1 --dump "$T/dd" >/dev/null && cp "$T/dd/output.npy" "$T/dd1.npy"
expect_ok "decode --dump replaces an earlier decode dump" "$BIN" decode --d-model 8 --heads 2 --seed 2 --dump "$T/dd"
! cmp -s "$T/dd/output.npy" "$T/dd1.npy" && [ "$(ls "$T/dd" | wc -l)" -eq 3 ] && ok "the new dump is in place" || bad "decode re-dump"
mkdir -p "$T/mine" && echo keep > "$T/mine/output.npy" && echo notes > "$T/mine/notes.txt"
expect_error "decode --dump over a user's folder" "holds 'notes.txt', which is not part of a decode dump" \
  "$BIN" decode --d-model 8 --heads 2 --dump "$T/mine"
grep -qx keep "$T/mine/output.npy" && ok "the user's output.npy is untouched" || bad "mine/output.npy replaced"
cp -r "$T/dd" "$T/dd_before"
expect_error "decode --dump over the file size limit" "File too large" \
  bash -c "ulimit -f 1; exec \"$BIN\" decode --d-model 64 --heads 2 --tokens 40 --dump \"$T/dd\""
diff -r "$T/dd" "$T/dd_before" >/dev/null && [ -z "$(ls -A "$T" | grep '\.tmp')" ] \
  && ok "a failed decode dump leaves the earlier one, no temporary folder" || bad "decode dump after EFBIG"

# --- export: every variant stage as PNG, SVG and PDF (the window's Export… draws the same pictures)
V=(--d-model 16 --heads 4 --kv-heads 2 --positions rope --mask causal --window 3 --sinks 1)
for stage in q_rotated k_rotated kv_groups window_mask; do
  for fmt in png svg pdf; do
    expect_ok "export --stage $stage .$fmt" "$BIN" export "${V[@]}" --stage "$stage" --out "$T/$stage.$fmt"
    [ -s "$T/$stage.$fmt" ] || bad "export $stage.$fmt is empty"
  done
done
expect_ok "export --stage position_bias (ALiBi)" "$BIN" export --heads 4 --d-model 16 --positions alibi --stage position_bias \
  --head 3 --out "$T/position_bias.svg"
grep -q "<title>ALiBi bias (position_bias) · head 3 · batch 0</title>" "$T/position_bias.svg" \
  && ok "export: the bias picture names the stage and head" || bad "position_bias title: $(grep -o '<title>[^<]*' "$T/position_bias.svg")"
# K and V are N·d_k wide when grouped (d_model when N = h)
out="$("$BIN" info "${V[@]}")"
grep -q "k_proj  *(1, 9, 8)  *(B, T_k, N·d_k)" <<<"$out" && grep -q "v_proj  *(1, 9, 8)  *(B, T_k, N·d_k)" <<<"$out" \
  && ok "info: grouped K/V projections are N·d_k wide" || bad "info k_proj axes: $out"
grep -q "k_proj  *(1, 9, 16)  *(B, T_k, d_model)" <<<"$("$BIN" info --d-model 16 --heads 4)" \
  && ok "info: multi-head K projection stays d_model" || bad "info MHA k_proj axes"

echo "$fails failure(s)"
[ $fails -eq 0 ]
