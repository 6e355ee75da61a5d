#!/usr/bin/python3
"""mhascope's whole-model forward beside the PyTorch reference forward, on a GPT-2-small-shaped
checkpoint (12 layers, d_model 768, h 12, V 50257, n_positions 1024, F32 safetensors) with random
weights, every layer's attention weights kept by both sides.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 scripts/bench_model.py \\
        --mhascope build/app/mhascope --folder /tmp/gpt2-small-random --tokens 1024 --rounds 5

The checkpoint is written once into --folder (about 500 MB; nothing is written into the
repository) by scripts/gen_model_fixtures.py's own writer, and the PyTorch side is that script's
reference forward (`gpt2_forward`: it keeps each layer's normed input, attention weights and
residual stream, and computes the logits), run in this process on one thread (torch 1.13 and
OpenBLAS, OPENBLAS_NUM_THREADS=1 set before torch loads: the pthread OpenBLAS ignores
torch.set_num_threads). Rounds alternate: one `mhascope bench --model … --repeat 1 --json` (which
opens the folder, runs one untimed forward, then the timed one) and one timed PyTorch forward, so
both see the same machine state. It prints each round, the medians and PyTorch / ours (> 1:
mhascope is faster).

Memory (--memory SHAPE, SHAPE one of SHAPES below: llama-3.2-3b, llama-3-8b, qwen3-0.6b, gemma-2-2b,
gemma-3-1b, phi-3-mini, olmo-2-1b, smollm3-3b, and the mixtures gpt-oss-20b, deepseek-v2-lite,
mixtral-8x7b, qwen3-30b-a3b, deepseek-v3): writes a checkpoint of that published shape, BF16 but
gpt-oss's MXFP4 expert blocks and scales (U8), whose values repeat a small random block (memory does
not depend on them), in shards of about 5 GB with model.safetensors.index.json, plus a byte-level
tokenizer.json, into --folder (--layers N: only its first N layers, to try a family on a small
folder first); runs
`info --model` and `predict --model … --text <T bytes>` under /usr/bin/time -v, sampling the
process's /proc/PID/status every 20 ms, and prints the peak resident memory (time's maximum RSS)
and, apart, the peak of its anonymous part (RssAnon: the process's own memory; the mapped weights
are page cache, RssFile, which the kernel can drop and read again) and the forward's memory
estimate. --delete removes the folder afterwards.

    /usr/bin/python3 scripts/bench_model.py --memory llama-3-8b --folder /tmp/llama-3-8b-shape --delete
    /usr/bin/python3 scripts/bench_model.py --memory gpt-oss-20b --folder /tmp/gptoss --with-bench --delete

The folders' sizes: gpt-oss-20b 13.8 GB, deepseek-v2-lite 31.4 GB, qwen3-30b-a3b 61.1 GB, mixtral-8x7b
93.4 GB, deepseek-v3 1342 GB (its BF16 shape; the published files are FP8).
"""
import os

# Before torch (and its BLAS) load: one thread for OpenBLAS's pthread build and for OpenMP.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_forward_torch  # noqa: E402,F401 (pins glibc's malloc thresholds before torch allocates)
import gen_model_fixtures as ref  # noqa: E402
import torch  # noqa: E402

# GPT-2 small as Hugging Face publishes it (huggingface.co/gpt2, config.json).
GPT2_SMALL = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1024,
    "n_ctx": 1024,
    "vocab_size": 50257,
    "layer_norm_epsilon": 1e-5,
    "activation_function": "gelu_new",
    "bos_token_id": 50256,
    "eos_token_id": 50256,
}


# Published config.json of each shape (the values that decide the sizes), from Hugging Face:
# huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json and
# huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json.
SHAPES = {
    "llama-3.2-3b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 3072,
        "intermediate_size": 8192, "num_attention_heads": 24, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": 128000, "eos_token_id": 128001, "attention_bias": False, "mlp_bias": False,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    "llama-3-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": 128000, "eos_token_id": 128001, "attention_bias": False,
    },
    # huggingface.co/Qwen/Qwen3-0.6B/blob/main/config.json: heads of 128 on d_model 1024 (h·d_k = 2048).
    "qwen3-0.6b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
        "intermediate_size": 3072, "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "hidden_act": "silu", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": 151643, "eos_token_id": 151645, "attention_bias": False, "use_sliding_window": False,
        "sliding_window": None, "max_window_layers": 28, "rope_scaling": None,
    },
    # huggingface.co/google/gemma-2-2b: 8 heads of 256 on d_model 2304, softcaps 50 and 30, alternating windows.
    "gemma-2-2b": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
        "intermediate_size": 9216, "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
        "head_dim": 256, "vocab_size": 256000, "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "sliding_window": 4096,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1,
        "attention_bias": False,
    },
    # huggingface.co/google/gemma-3-1b-pt: 4 heads of 256 and one K/V head on d_model 1152, five local layers per global.
    "gemma-3-1b": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
        "intermediate_size": 6912, "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
        "head_dim": 256, "vocab_size": 262144, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 256, "sliding_window": 512, "sliding_window_pattern": 6,
        "attn_logit_softcapping": None, "final_logit_softcapping": None, "rope_scaling": None,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1,
        "attention_bias": False,
    },
    # huggingface.co/microsoft/Phi-3-mini-4k-instruct: fused qkv_proj and gate_up_proj, 32 heads of 96.
    "phi-3-mini": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
        "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "vocab_size": 32064, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None, "sliding_window": 2047,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1,
        "eos_token_id": 32000, "attention_bias": False,
    },
    # huggingface.co/allenai/OLMo-2-0425-1B: q/k norm over the whole projection, post-norm blocks.
    "olmo-2-1b": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 2048,
        "intermediate_size": 8192, "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16,
        "vocab_size": 100352, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
        "rope_scaling": None, "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": None, "eos_token_id": 100257, "attention_bias": False,
    },
    # huggingface.co/HuggingFaceTB/SmolLM3-3B: every 4th layer without RoPE.
    "smollm3-3b": {
        "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_size": 2048,
        "intermediate_size": 11008, "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 4,
        "vocab_size": 128256, "max_position_embeddings": 65536, "rms_norm_eps": 1e-6, "rope_theta": 5000000.0,
        "rope_scaling": None, "no_rope_layer_interval": 4,
        "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)], "use_sliding_window": False,
        "sliding_window": None, "hidden_act": "silu", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": 128000, "eos_token_id": 128012, "attention_bias": False,
    },
    # The mixtures and latent attention. huggingface.co/openai/gpt-oss-20b/blob/main/config.json: 64 heads of 64
    # on d_model 2880 over 8 K/V heads, learned sinks, 128-token sliding layers alternating with full ones, YaRN,
    # 32 experts (4 a token) stored as MXFP4 blocks and scales (U8), the rest BF16.
    "gpt-oss-20b": {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
        "attention_dropout": 0.0, "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64,
        "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096, "initializer_range": 0.02,
        "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 12,
        "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
        "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32, "output_router_logits": False,
        "pad_token_id": 199999,
        "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
        "rms_norm_eps": 1e-5,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                         "rope_type": "yarn", "truncate": False},
        "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
        "tie_word_embeddings": False, "use_cache": True, "vocab_size": 201088,
    },
    # huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json: latent attention without a query
    # low-rank (q_lora_rank null), kv_lora_rank 512, heads of 128 + 64 rotary, values of 128; layer 0 dense,
    # the other 26 of 64 routed experts (6 a token, greedy softmax) plus 2 shared; YaRN x40 with mscale 0.707.
    "deepseek-v2-lite": {
        "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "attention_bias": False,
        "attention_dropout": 0.0, "aux_loss_alpha": 0.001, "bos_token_id": 100000, "eos_token_id": 100001,
        "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
        "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
        "n_shared_experts": 2, "norm_topk_prob": False, "num_attention_heads": 16, "num_experts_per_tok": 6,
        "num_hidden_layers": 27, "num_key_value_heads": 16, "pretraining_tp": 1, "q_lora_rank": None,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-6,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
                         "original_max_position_embeddings": 4096, "type": "yarn"},
        "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "seq_aux": True,
        "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy", "torch_dtype": "bfloat16",
        "use_cache": True, "v_head_dim": 128, "vocab_size": 102400,
    },
    # Three that need a bigger disk than the one these figures were measured on (about 93, 61 and 1 340 GB).
    # huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json: 8 experts of 14336, 2 a token.
    "mixtral-8x7b": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
        "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
        "output_router_logits": False, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 32000,
    },
    # huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json: 32 heads of 128 on d_model 2048 over 4 K/V heads,
    # per-head q/k norm, 128 experts of 768 (8 a token, renormalised).
    "qwen3-30b-a3b": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
        "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
        "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": False,
        "rms_norm_eps": 1e-6, "rope_scaling": None, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 151936,
    },
    # huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json: q_lora_rank 1536, 128 heads, the first 3
    # layers dense, then 256 routed experts of 2048 (8 a token in 4 of 8 groups, sigmoid) plus 1 shared. The
    # published files are FP8 (quantization_config fp8 e4m3 in blocks of 128, which mhascope refuses); this is
    # their BF16 shape, as DeepSeek's own fp8_cast_bf16.py writes it, so that key is left out. The one
    # multi-token-prediction layer (num_nextn_predict_layers) is not written: the forward does not read it.
    "deepseek-v3": {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "attention_bias": False,
        "attention_dropout": 0.0, "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1,
        "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02,
        "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
        "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
        "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 128, "num_experts_per_tok": 8,
        "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-6,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                         "original_max_position_embeddings": 4096, "type": "yarn"},
        "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": True,
        "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
        "use_cache": True, "v_head_dim": 128, "vocab_size": 129280,
    },
}


def weights():
    """Random weights of the shape, with GPT-2's initial scale (std 0.02 for the matrices, as its
    initializer_range): realistic magnitudes keep the softmax away from saturation and the
    products away from denormals, which would time something no real model does."""
    W = ref.gpt2_weights(GPT2_SMALL, seed=1)
    for name, t in W.items():
        if t.dim() == 2:
            t.mul_(0.02 / float(t.std()))
    return W


def ensure_folder(folder):
    """Writes config.json + model.safetensors once; an existing folder with the same config is reused."""
    cfg_path = os.path.join(folder, "config.json")
    if os.path.exists(cfg_path) and os.path.exists(os.path.join(folder, "model.safetensors")):
        with open(cfg_path) as f:
            have = json.load(f)
        if all(have.get(k) == v for k, v in GPT2_SMALL.items()):
            return
        sys.exit(f"{folder} holds another model's config.json; name an empty or new --folder")
    if os.path.exists(folder) and os.listdir(folder):
        sys.exit(f"{folder} is not empty and holds no GPT-2-small checkpoint of this script; name a new --folder")
    os.makedirs(folder, exist_ok=True)
    W = weights()
    ref.save_safetensors(os.path.join(folder, "model.safetensors"), W, "F32")
    with open(cfg_path, "w") as f:
        json.dump(dict(GPT2_SMALL, torch_dtype="float32"), f, indent=2)


def read_weights(folder):
    """The checkpoint as float32 tensors, read back from the file as any reader would."""
    import numpy as np
    import struct
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=a).reshape(info["shape"]).copy())
    return out


def seeded_ids(T, V, seed):
    """The same ids as `mhascope bench --model … --tokens T --seed S` (splitmix64, id = z mod V)."""
    mask = (1 << 64) - 1
    x, ids = seed, []
    for _ in range(T):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        ids.append(z % V)
    return ids


def torch_forward_seconds(W, ids):
    t0 = time.perf_counter()
    normed, attn, hidden, logits = ref.gpt2_forward(GPT2_SMALL, W, ids)
    seconds = time.perf_counter() - t0
    del normed, attn, hidden, logits
    return seconds


def ours(args):
    cmd = [args.mhascope, "bench", "--model", args.folder, "--tokens", str(args.tokens), "--repeat", "1",
           "--threads", "1", "--json", "--memory-budget", str(args.memory_budget)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("mhascope bench failed: " + out.stderr.strip())
    return json.loads(out.stdout)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Memory: a checkpoint of a real Llama shape, and the peaks of info and predict on it
# ---------------------------------------------------------------------------------------------
def llama_tensor_shapes(cfg):
    """(name, shape) in Hugging Face's Llama layout, in the order the real shards hold them."""
    d, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    h, N = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // h)
    out = [("model.embed_tokens.weight", (V, d))]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (d,)), (p + "self_attn.q_proj.weight", (h * hd, d)),
                (p + "self_attn.k_proj.weight", (N * hd, d)), (p + "self_attn.v_proj.weight", (N * hd, d)),
                (p + "self_attn.o_proj.weight", (d, h * hd)), (p + "post_attention_layernorm.weight", (d,)),
                (p + "mlp.gate_proj.weight", (F, d)), (p + "mlp.up_proj.weight", (F, d)),
                (p + "mlp.down_proj.weight", (d, F))]
    out.append(("model.norm.weight", (d,)))
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, d)))
    return out


def tensor_shapes(cfg):
    """(name, shape, safetensors dtype) of every tensor of the shape's family, in the order of its layers:
    Llama's own list, or for the newer families the fixtures script's family_weights (moe_weights for the
    mixtures and latent attention) made on PyTorch's meta device (shapes and dtypes, no numbers): gpt-oss's
    MXFP4 experts U8, the rest BF16."""
    if cfg["model_type"] == "llama":
        return [(name, shape, "BF16") for name, shape in llama_tensor_shapes(cfg)]
    real = ref.rnd, ref.mxfp4_quantise_random
    ref.rnd = lambda g, *shape, scale=0.2: torch.empty(*shape, device="meta")
    ref.mxfp4_quantise_random = lambda g, E, rows, cols: (
        torch.empty(E, rows, cols // 32, 16, dtype=torch.uint8, device="meta"),
        torch.empty(E, rows, cols // 32, dtype=torch.uint8, device="meta"))
    try:
        make = ref.moe_weights if cfg["model_type"] in ref.MOE else ref.family_weights
        W = make(cfg, seed=1)
    finally:
        ref.rnd, ref.mxfp4_quantise_random = real

    def layer_of(name):  # the embedding first, each layer's tensors together, the final norm and lm_head last
        if name.startswith("model.layers."):
            return (1, int(name.split(".")[2]))
        return (0, 0) if name.startswith("model.embed_tokens") else (2, 0)
    names = sorted(W, key=layer_of)  # stable: a layer's tensors keep the generator's order
    return [(n, tuple(W[n].shape), "U8" if W[n].dtype == torch.uint8 else "BF16") for n in names]


# gpt-oss's MXFP4 scale byte for the random experts: 2^(120 - 127) = 1/128 times e2m1 values of RMS ~2.9 (random
# nibbles) gives weights of RMS ~0.023, the 0.02 of the BF16 block.
MXFP4_SCALE_BYTE = 120


def write_shape(folder, cfg, shard_bytes=5 << 30):
    """Sharded safetensors + index + config.json; every BF16 tensor's bytes repeat one random block of std
    0.02 (norm weights 1.0), gpt-oss's MXFP4 blocks one block of random bytes and their scales the constant
    MXFP4_SCALE_BYTE, so the forward stays finite."""
    import numpy as np
    import struct
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(1)
    block = (rng.standard_normal(1 << 20).astype(np.float32) * 0.02).view(np.uint32)
    block = ((block + 0x8000) >> 16).astype("<u2").tobytes()  # round to BF16 (no NaN in the block)
    one = struct.pack("<H", 0x3F80) * 65536  # BF16 1.0
    nibbles = rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    scales = bytes([MXFP4_SCALE_BYTE]) * 65536
    width = {"BF16": 2, "U8": 1}
    shards, cur, size = [], [], 0
    for name, shape, dtype in tensor_shapes(cfg):
        n = width[dtype] * int(np.prod(shape))
        if cur and size + n > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape, dtype, n))
        size += n
    shards.append(cur)
    index = {"metadata": {"total_size": 0}, "weight_map": {}}
    for k, part in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, shape, dtype, n in part:
            header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
            index["weight_map"][name] = fname
            off += n
        index["metadata"]["total_size"] += off
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for name, shape, dtype, n in part:
                src = scales if name.endswith("_scales") else nibbles if name.endswith("_blocks") else \
                    one if name.endswith("norm.weight") else block
                while n > 0:
                    f.write(src[:n])
                    n -= min(n, len(src))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_byte_tokenizer(folder)


def shape_config(name, layers=None):
    """The shape's config.json, or with `layers` the same cut to its first layers (per-layer lists cut too):
    a small folder of the same family to try the command on before writing tens of GB."""
    cfg = dict(SHAPES[name])
    if layers is None:
        return cfg
    L = cfg["num_hidden_layers"]
    if not 1 <= layers <= L:
        sys.exit(f"--layers must be 1 to {L} ({name}'s num_hidden_layers), got {layers}")
    for k, v in cfg.items():
        if isinstance(v, list) and len(v) == L:
            cfg[k] = v[:layers]
    cfg["num_hidden_layers"] = layers
    if "max_window_layers" in cfg:
        cfg["max_window_layers"] = min(cfg["max_window_layers"], layers)
    return cfg


def write_byte_tokenizer(folder):
    """A byte-level BPE tokenizer.json with one token per byte (ids 0-255, no merges): the text's
    length in bytes is its length in tokens."""
    b2u = dict(zip(*ref.gpt2_byte_chars()))
    vocab = {b2u[b]: b for b in range(256)}
    tok = {"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "vocab": vocab, "merges": []}}
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)


def peak_memory(cmd):
    """Runs cmd under /usr/bin/time -v; returns (exit code, output, time's max RSS in KiB, the peak
    RssAnon and RssFile seen in /proc/PID/status, KiB)."""
    import tempfile
    # Into files, not pipes: a command that prints more than a pipe holds would wait for a reader that only
    # reads after it exits.
    out_f, err_f = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    p = subprocess.Popen(["/usr/bin/time", "-v"] + cmd, stdout=out_f, stderr=err_f, text=True)
    anon = filed = 0
    child = None
    while p.poll() is None:
        try:
            if child is None:
                with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                    kids = f.read().split()
                child = kids[0] if kids else None
            if child is not None:
                with open(f"/proc/{child}/status") as f:
                    for line in f:
                        if line.startswith("RssAnon:"):
                            anon = max(anon, int(line.split()[1]))
                        elif line.startswith("RssFile:"):
                            filed = max(filed, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    p.wait()
    out_f.seek(0)
    err_f.seek(0)
    out, err = out_f.read(), err_f.read()
    maxrss = 0
    for line in err.splitlines():
        if "Maximum resident set size" in line:
            maxrss = int(line.split(":")[1])
    return p.returncode, out + err, maxrss, anon, filed


def forward_estimate(mhascope, folder, T):
    """The forward's memory estimate (every layer's attention kept), from the refusal of a 1 MiB
    budget: nothing is run."""
    out = subprocess.run([mhascope, "bench", "--model", folder, "--tokens", str(T), "--memory-budget", "1"],
                         capture_output=True, text=True)
    at = out.stderr.find("needs about ")
    if at >= 0:
        return out.stderr[at + 12:].split(",")[0]
    return "under 1 MiB" if out.returncode == 0 else "not printed: " + out.stderr.strip()


def memory(a):
    cfg = shape_config(a.memory, a.layers)
    folder = a.folder
    if not os.path.exists(os.path.join(folder, "config.json")):
        if os.path.exists(folder) and os.listdir(folder):
            sys.exit(f"{folder} is not empty; name a new --folder")
        t0 = time.time()
        write_shape(folder, cfg)
        print(f"wrote {folder} in {time.time() - t0:.0f} s", flush=True)
    files = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".safetensors"))
    cut = f", its first {a.layers} of {SHAPES[a.memory]['num_hidden_layers']} layers" if a.layers else ""
    print(f"shape: {a.memory}{cut} ({files / 2**30:.2f} GiB of safetensors); cpu: {cpu_name()}; "
          f"RAM {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB")
    text = ("The quick brown fox jumps over the lazy dog. " * 64)[: a.text_bytes]
    runs = [("info", [a.mhascope, "info", "--model", folder]),
            (f"predict T={a.text_bytes}", [a.mhascope, "predict", "--model", folder, "--text", text, "--top", "1",
                                           "--memory-budget", str(a.memory_budget)]),
            (f"bench T={a.text_bytes} (every layer's attention kept)",
             [a.mhascope, "bench", "--model", folder, "--text", text, "--repeat", "1",
              "--memory-budget", str(a.memory_budget)])]
    if not a.with_bench:
        runs = runs[:2]
    for label, cmd in runs:
        t0 = time.time()
        rc, out, maxrss, anon, filed = peak_memory(cmd)
        est = [line.strip() for line in out.splitlines()
               if any(w in line for w in ("estimate", "error", "forward with", "of which"))]
        print(f"{label}: exit {rc}, {time.time() - t0:.1f} s; peak RSS {maxrss / 2**20:.2f} GiB "
              f"(/usr/bin/time -v); peak anonymous {anon / 2**20:.2f} GiB, peak file-backed {filed / 2**20:.2f} GiB "
              f"(/proc/PID/status)" + ("; " + " | ".join(est) if est else ""), flush=True)
    print(f"estimate: {forward_estimate(a.mhascope, folder, a.text_bytes)}")
    if a.delete:
        import shutil
        shutil.rmtree(folder)
        print(f"deleted {folder}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mhascope", default=os.path.join(os.path.dirname(__file__), "..", "build", "app", "mhascope"))
    ap.add_argument("--folder", default="/tmp/gpt2-small-random", help="where the checkpoint is written (reused)")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (at least 5 for a median)")
    ap.add_argument("--memory-budget", type=int, default=8192, help="MiB, passed to mhascope bench")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--memory", choices=sorted(SHAPES), help="measure the memory of this shape instead")
    ap.add_argument("--text-bytes", type=int, default=256, help="--memory: the text's length (one token a byte)")
    ap.add_argument("--delete", action="store_true", help="--memory: delete --folder afterwards")
    ap.add_argument("--layers", type=int, help="--memory: only the shape's first LAYERS layers (a small try)")
    ap.add_argument("--with-bench", action="store_true",
                    help="--memory: also `bench --model` (two forwards keeping every layer's attention)")
    a = ap.parse_args()
    if a.memory:
        if a.folder == ap.get_default("folder"):
            a.folder = f"/tmp/{a.memory}-shape"
        return memory(a)
    if a.tokens < 1 or a.tokens > GPT2_SMALL["n_positions"]:
        sys.exit(f"--tokens must be 1 to {GPT2_SMALL['n_positions']} (GPT-2's n_positions), got {a.tokens}")
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    ensure_folder(a.folder)
    W = read_weights(a.folder)
    ids = torch.tensor(seeded_ids(a.tokens, GPT2_SMALL["vocab_size"], a.seed))
    torch_forward_seconds(W, ids)  # warm-up: PyTorch's first forward allocates its buffers
    with open("/proc/self/maps") as f:
        blas = "OpenBLAS" if "openblas" in f.read() else "another BLAS"
    print(f"cpu: {cpu_name()}, {os.cpu_count()} logical CPUs; torch {torch.__version__} on {blas}, one thread")
    print(f"model: GPT-2-small shape, random F32 weights in {a.folder}; T = {a.tokens}")
    ts, us = [], []
    for r in range(a.rounds):
        j = ours(a)
        us.append(j["forward_ms"]["median"] / 1e3)
        ts.append(torch_forward_seconds(W, ids))
        p = j["parts_median_ms"]
        print(f"round {r + 1}: mhascope {us[-1] * 1e3:.1f} ms (attention {p['attention']:.1f}, MLP {p['mlp']:.1f}, "
              f"logits {p['logits']:.1f}), PyTorch {ts[-1] * 1e3:.1f} ms, PyTorch / ours {ts[-1] / us[-1]:.2f}",
              flush=True)
    ratios = [t / u for t, u in zip(ts, us)]
    print(f"medians of {a.rounds} rounds: mhascope {statistics.median(us) * 1e3:.1f} ms, "
          f"PyTorch {statistics.median(ts) * 1e3:.1f} ms, PyTorch / ours {statistics.median(ratios):.2f} "
          f"(> 1: mhascope is faster)")


if __name__ == "__main__":
    main()
