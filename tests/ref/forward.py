#!/usr/bin/env python3
"""forward.py — an independent reference forward pass (numpy, float64 arithmetic on the file's
weights) for the GGUF families llama (Mixtral's experts included), qwen2, qwen3, qwen3moe, phi3,
gemma, gemma2, gemma3, olmoe, gpt-oss (attention sinks, YaRN as ggml computes it, the
clamped SwiGLU), qwen35, qwen2moe and qwen35moe (Gated DeltaNet layers; a shared expert), written
from the published model definitions (Hugging Face transformers' modeling files, the Gemma
and Phi-3 reports) with llama.cpp's graph as a cross-check of what GGUF stores. It is what
llmchat's C pass is compared with; it shares no code with llmchat.

    forward.py MODEL.gguf --ids 1,2,3 --tensors [POS] [--layers A-B] [--ctx N]
    forward.py MODEL.gguf --ids 1,2,3 --greedy N [--json] [--no-stop] [--ctx N]
    forward.py MODEL.gguf --ids 1,2,3 --logits
    forward.py MODEL.gguf --ids 1,2,3 --nll [--ctx N]

--tensors writes, for the token at position POS (default: the last id), one JSON object a
line for every named step of the pass: {"name", "layer", "pos", "shape", "values"} (layer
-1 outside the blocks); tests/ref/README.md says what each step holds. --greedy feeds the
ids, then appends the argmax N times (stopping after an end-of-generation id unless
--no-stop) and prints the new ids, space-separated; with --json one object with the
prompt, the new ids and each choice's margin (top logit minus the runner-up). --logits
prints the last position's logits as JSON; --nll the mean negative log-likelihood of each
id after the first given those before it (teacher-forced, as a perplexity run), and its
exponential. --ids also accepts a file of ids (@FILE).
--ctx is the context the model runs with (default: the file's context_length); only
Phi-3's LongRoPE reads it (long factors when it exceeds the original context), as
llama.cpp does with its -c.

Owns: the hyperparameters as GGUF stores them per family, the per-family arithmetic. Does
not: tokenize (ids in, ids out), sample, or quantize; quantized files are dequantized
(gguf.py) and run like F32 ones.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

# What each family changes, as data (llama.cpp's llm_arch tables and graph builders; HF's
# modeling_*.py). rope: 'norm' rotates pairs (2i, 2i+1), 'neox' pairs (i, i + n_rot/2).
# qk_norm: 'whole' normalises the whole q / k vector before the heads (OLMoE), True each
# head's. experts: 'optional' (a mixture-of-experts feed-forward when {arch}.expert_count > 0:
# Mixtral), 'required', or absent; norm_w: the chosen experts' probabilities renormalised to
# sum 1 (llama.cpp's build_moe_ffn norm_w; HF's norm_topk_prob); gating 'softmax_weight':
# the experts with the largest logits, weighted by a softmax over their k logits only
# (gpt-oss; the others: 'softmax', probabilities over all experts). sinks: a learned logit
# per head in each softmax's denominator (attn_sinks). ffn_norm: the name of the norm
# before the feed-forward. swa_period: layers il % period == 0 slide (gpt-oss's even ones).
# act 'swiglu_oai': gpt-oss's clamped SwiGLU (see swiglu_oai). delta_net: hybrid (Qwen 3.5,
# llama.cpp's qwen35.cpp and delta-net-base.cpp): Gated DeltaNet layers and gated attention
# (see Pass._delta_net, Pass._block).
FAMILIES = {
    'llama':  dict(rope='norm', act='silu', embd_scale=False, qk_norm=False, post_norms=False,
                   experts='optional', norm_w=True),
    'qwen3moe': dict(rope='neox', act='silu', embd_scale=False, qk_norm=True, post_norms=False,
                     experts='required', norm_w=True),
    'olmoe':  dict(rope='neox', act='silu', embd_scale=False, qk_norm='whole', post_norms=False,
                   experts='required', norm_w=False),
    'gpt-oss': dict(rope='neox', act='swiglu_oai', embd_scale=False, qk_norm=False, post_norms=False,
                    experts='required', norm_w=False, gating='softmax_weight', sinks=True,
                    ffn_norm='post_attention_norm', swa_period=2),
    'qwen2':  dict(rope='neox', act='silu', embd_scale=False, qk_norm=False, post_norms=False),
    'qwen3':  dict(rope='neox', act='silu', embd_scale=False, qk_norm=True,  post_norms=False),
    'phi3':   dict(rope='neox', act='silu', embd_scale=False, qk_norm=False, post_norms=False),
    'gemma':  dict(rope='neox', act='gelu', embd_scale=True,  qk_norm=False, post_norms=False),
    'gemma2': dict(rope='neox', act='gelu', embd_scale=True,  qk_norm=False, post_norms=True),
    'gemma3': dict(rope='neox', act='gelu', embd_scale=True,  qk_norm=True,  post_norms=True),
    'qwen35': dict(rope='neox', act='silu', embd_scale=False, qk_norm=True, post_norms=False,
                   ffn_norm='post_attention_norm', delta_net=True),
    'qwen2moe': dict(rope='neox', act='silu', embd_scale=False, qk_norm=False, post_norms=False,
                     experts='required', norm_w=False, shexp=True),
    'qwen35moe': dict(rope='neox', act='silu', embd_scale=False, qk_norm=True, post_norms=False,
                      ffn_norm='post_attention_norm', delta_net=True, experts='required', norm_w=True,
                      shexp=True),
}
GEMMA3_SWA_PATTERN = 6     # layers il % 6 < 5 slide, every sixth is global (llama.cpp, HF)
GEMMA3_LOCAL_BASE = 10000.0


class ModelError(Exception):
    pass


class Hparams:
    """The hyperparameters of a GGUF file, with the defaults llama.cpp applies when a key is
    absent."""

    def __init__(self, f, ctx=None):
        a = f.arch
        if a not in FAMILIES:
            raise ModelError('%s: architecture %r is not one the reference knows (%s)'
                             % (f.path, a, ', '.join(FAMILIES)))
        self.arch, self.fam = a, FAMILIES[a]
        key = lambda k, d=None: f.get('%s.%s' % (a, k), d)

        def need(k):
            v = key(k)
            if v is None:
                raise ModelError('%s: %s.%s is missing' % (f.path, a, k))
            return v
        self.n_embd, self.n_layer = int(need('embedding_length')), int(need('block_count'))
        self.n_head = int(need('attention.head_count'))
        self.n_head_kv = int(key('attention.head_count_kv', self.n_head))
        self.n_ff = int(need('feed_forward_length'))
        self.n_expert = int(key('expert_count', 0)) if self.fam.get('experts') else 0
        self.n_expert_used = int(key('expert_used_count', 0)) if self.n_expert else 0
        if self.fam.get('experts') == 'required' and not (self.n_expert > 0 and self.n_expert_used > 0):
            raise ModelError('%s: %s needs %s.expert_count and %s.expert_used_count > 0' % (f.path, a, a, a))
        if self.n_expert_used > self.n_expert:
            raise ModelError('%s: %d experts used of %d' % (f.path, self.n_expert_used, self.n_expert))
        # the experts' hidden size: qwen3moe's own key (else n_ff / n_expert_used, as
        # llama.cpp), the others' feed_forward_length
        self.n_ff_exp = self.n_ff
        if a in ('qwen3moe', 'qwen2moe', 'qwen35moe'):
            self.n_ff_exp = int(key('expert_feed_forward_length', 0)) or self.n_ff // self.n_expert_used
        # a shared expert's (shexp: Qwen 3.5 MoE, llama.cpp's qwen35moe.cpp): its own key, else
        # feed_forward_length
        self.n_ff_shexp = int(key('expert_shared_feed_forward_length', 0)) or self.n_ff
        if a == 'gpt-oss':
            self.n_ff_exp = int(need('expert_feed_forward_length'))
        self.eps = float(need('attention.layer_norm_rms_epsilon'))
        self.head_k = int(key('attention.key_length', self.n_embd // self.n_head))
        self.head_v = int(key('attention.value_length', self.n_embd // self.n_head))
        self.n_rot = int(key('rope.dimension_count', self.head_k))
        self.n_ctx_train = int(key('context_length', 2048))
        self.ctx = int(ctx) if ctx else self.n_ctx_train
        self.n_ctx_orig = int(key('rope.scaling.original_context_length', self.n_ctx_train))
        self.rope_base = float(key('rope.freq_base', 10000.0))
        scaling = key('rope.scaling.type', 'linear')
        factor = float(key('rope.scaling.factor', key('rope.scale_linear', 0.0)) or 0.0)
        if scaling not in ('none', 'linear', 'longrope', 'yarn') and factor not in (0.0, 1.0):
            raise ModelError('%s: RoPE scaling %r is not supported by the reference' % (f.path, scaling))
        self.freq_scale = 1.0 if (scaling == 'none' or factor == 0.0) else 1.0 / factor
        self.attn_factor = float(key('rope.scaling.attn_factor', 1.0))
        self.yarn = None
        if scaling == 'yarn' and self.freq_scale != 1.0:
            self.yarn = yarn_params(self.n_rot, self.n_ctx_orig, self.rope_base, self.freq_scale,
                                    float(key('rope.scaling.yarn_beta_fast', 32.0)),
                                    float(key('rope.scaling.yarn_beta_slow', 1.0)))
        self.n_swa = int(key('attention.sliding_window', 4096 if a == 'gemma2' else 0))
        if a == 'gpt-oss' and key('attention.sliding_window') is None:
            raise ModelError('%s: gpt-oss.attention.sliding_window is missing' % f.path)
        if a == 'phi3' and key('attention.sliding_window') is None:
            raise ModelError('%s: phi3.attention.sliding_window is missing' % f.path)
        if a == 'gemma3' and key('attention.sliding_window') is None:
            raise ModelError('%s: gemma3.attention.sliding_window is missing' % f.path)
        self.attn_softcap = key('attn_logit_softcapping', 50.0 if a == 'gemma2' else None)
        self.final_softcap = key('final_logit_softcapping', 30.0 if a == 'gemma2' else None)
        self.kq_scale = self._kq_scale()
        self.recurrent = [False] * self.n_layer
        self.sections = None
        if self.fam.get('delta_net'):   # the multi-token-prediction blocks are not run
            self.n_layer -= int(key('nextn_predict_layers', 0))
            self.dn_conv, self.dn_head = int(need('ssm.conv_kernel')), int(need('ssm.state_size'))
            self.dn_k_heads, self.dn_v_heads = int(need('ssm.group_count')), int(need('ssm.time_step_rank'))
            flags = key('attention.recurrent_layers')
            every = int(key('full_attention_interval', 4))
            self.recurrent = [bool(flags[i]) if flags is not None else (i + 1) % every != 0
                              for i in range(self.n_layer)]
            self.sections = [int(x) for x in need('rope.dimension_sections')] + [0] * 4
        self.bos = f.get('tokenizer.ggml.bos_token_id')
        self.eog = {int(f.get(k)) for k in ('tokenizer.ggml.eos_token_id', 'tokenizer.ggml.eot_token_id')
                    if f.get(k) is not None}

    def _kq_scale(self):
        """The factor on q.k: 1/sqrt(head size). Gemma 2 and 3 use 1/sqrt(query_pre_attn_scalar),
        which GGUF does not store: llama.cpp (and the HF configs) take n_embd / n_head for the
        27B models (46 and 62 layers), the head size otherwise."""
        big = (self.arch == 'gemma2' and self.n_layer == 46) or (self.arch == 'gemma3' and self.n_layer == 62)
        return 1.0 / math.sqrt(self.n_embd / self.n_head if big else self.head_k)

    def local(self, il):
        """Whether layer il is one of the family's local (sliding-window) layers: Gemma 2's
        even layers, five of every six of Gemma 3's, all of Phi-3's."""
        if self.arch == 'gemma2':
            return il % 2 == 0
        if self.arch == 'gemma3':
            return il % GEMMA3_SWA_PATTERN < GEMMA3_SWA_PATTERN - 1
        if self.fam.get('swa_period'):
            return il % self.fam['swa_period'] == 0
        return self.arch == 'phi3'

    def sliding(self, il):
        """Whether layer il attends over a sliding window of n_swa keys."""
        return self.n_swa > 0 and self.local(il)

    def rope_params(self, il):
        """(base, freq_scale) of layer il: Gemma 3's local layers use base 10000 without
        scaling, its global ones the file's base and scaling."""
        if self.arch == 'gemma3' and self.local(il):
            return GEMMA3_LOCAL_BASE, 1.0
        return self.rope_base, self.freq_scale


class Layer:
    pass


class Model:
    """A GGUF model's weights (float64) and hyperparameters."""

    def __init__(self, path, ctx=None, gelu='tanh', dtype=np.float64):
        f = gguf.GGUFFile(path)
        self.path, self.hp = path, Hparams(f, ctx)
        self.gelu = gelu_ggml_f16 if gelu == 'ggml-f16' else gelu_tanh
        hp = self.hp
        t = lambda name: f.tensor(name).astype(dtype) if name in f.tensors else None

        def need(name, shape):
            w = t(name)
            if w is None:
                raise ModelError('%s: tensor %s is missing' % (path, name))
            if tuple(w.shape) != tuple(shape):
                raise ModelError('%s: %s has shape %s (rows, cols), expected %s'
                                 % (path, name, list(w.shape), list(shape)))
            return w
        self.tok_embd = t('token_embd.weight')
        if self.tok_embd is None or self.tok_embd.shape[1] != hp.n_embd:
            raise ModelError('%s: token_embd.weight is missing or not %d wide' % (path, hp.n_embd))
        self.n_vocab = self.tok_embd.shape[0]
        self.output_norm = need('output_norm.weight', (hp.n_embd,))
        out = t('output.weight')
        self.output = out if out is not None else self.tok_embd   # tied embeddings
        self.rope_factors = self._rope_factors(f, t)
        if hp.sections is not None:   # interleaved multimodal RoPE on text: a pair turns with the
            sec, total = hp.sections[:4], sum(hp.sections[:4])   # position unless its sector
            turns = [(i % total) < 3 * sec[(i % total) % 3] for i in range(hp.n_rot // 2)]
            if not all(turns):   # falls outside the interleaving (ggml's ggml_mrope_cache_init)
                self.rope_factors = np.array([1.0 if u else np.inf for u in turns])
        self.layers = [self._layer(il, t, need) for il in range(hp.n_layer)]

    def _rope_factors(self, f, t):
        """The frequency divisors of RoPE: rope_freqs (Llama 3), or Phi-3's LongRoPE long /
        short factors, chosen as llama.cpp does: long when the context exceeds the original
        one. Only the first n_rot / 2 are used."""
        hp = self.hp
        if 'rope_freqs.weight' in f.tensors:
            ff = t('rope_freqs.weight')
        elif 'rope_factors_long.weight' in f.tensors:
            ff = t('rope_factors_long.weight' if hp.ctx > hp.n_ctx_orig else 'rope_factors_short.weight')
        else:
            return None
        ff = ff.reshape(-1)
        if len(ff) < hp.n_rot // 2:
            raise ModelError('%s: %d RoPE factors, %d needed' % (f.path, len(ff), hp.n_rot // 2))
        return ff[:hp.n_rot // 2]

    def _delta_net_layer(self, L, p, need):
        """A Gated DeltaNet layer's tensors (numpy shapes: rows, cols)."""
        hp = self.hp
        kd, vd = hp.dn_k_heads * hp.dn_head, hp.dn_v_heads * hp.dn_head
        L.dn_qkv = need(p + 'attn_qkv.weight', (2 * kd + vd, hp.n_embd))
        L.dn_z = need(p + 'attn_gate.weight', (vd, hp.n_embd))
        L.dn_conv = need(p + 'ssm_conv1d.weight', (2 * kd + vd, hp.dn_conv))
        L.dn_dt = need(p + 'ssm_dt.bias', (hp.dn_v_heads,))
        L.dn_a = need(p + 'ssm_a', (hp.dn_v_heads,))
        L.dn_beta = need(p + 'ssm_beta.weight', (hp.dn_v_heads, hp.n_embd))
        L.dn_alpha = need(p + 'ssm_alpha.weight', (hp.dn_v_heads, hp.n_embd))
        L.dn_norm = need(p + 'ssm_norm.weight', (hp.dn_head,))
        L.wo = need(p + 'ssm_out.weight', (hp.n_embd, vd))

    def _ffn_layer(self, L, p, need):
        """Layer L's feed-forward: its norm, then a dense one or a mixture of experts."""
        hp = self.hp
        L.ffn_norm = need(p + '%s.weight' % hp.fam.get('ffn_norm', 'ffn_norm'), (hp.n_embd,))
        L.moe = hp.n_expert > 0
        if L.moe:   # numpy shapes: the reverse of GGUF's dims ([dim, n_ff_exp, n_expert] ...)
            ne, ff = hp.n_expert, hp.n_ff_exp
            L.gate_inp = need(p + 'ffn_gate_inp.weight', (ne, hp.n_embd))
            L.gate_exps = need(p + 'ffn_gate_exps.weight', (ne, ff, hp.n_embd))
            L.up_exps = need(p + 'ffn_up_exps.weight', (ne, ff, hp.n_embd))
            L.down_exps = need(p + 'ffn_down_exps.weight', (ne, hp.n_embd, ff))
            L.gate_inp_b = L.gate_b = L.up_b = L.down_b = None
            if hp.arch == 'gpt-oss':
                L.gate_inp_b = need(p + 'ffn_gate_inp.bias', (ne,))
                L.gate_b = need(p + 'ffn_gate_exps.bias', (ne, ff))
                L.up_b = need(p + 'ffn_up_exps.bias', (ne, ff))
                L.down_b = need(p + 'ffn_down_exps.bias', (ne, hp.n_embd))
            L.shexp = bool(hp.fam.get('shexp'))
            if L.shexp:
                sh = hp.n_ff_shexp
                L.gate_shexp = need(p + 'ffn_gate_shexp.weight', (sh, hp.n_embd))
                L.up_shexp = need(p + 'ffn_up_shexp.weight', (sh, hp.n_embd))
                L.down_shexp = need(p + 'ffn_down_shexp.weight', (hp.n_embd, sh))
                L.gate_inp_shexp = need(p + 'ffn_gate_inp_shexp.weight', (hp.n_embd,))
            return L
        if hp.arch == 'phi3':
            up = need(p + 'ffn_up.weight', (2 * hp.n_ff, hp.n_embd))  # gate rows, then up rows
            L.ffn_gate, L.ffn_up = up[:hp.n_ff], up[hp.n_ff:]
        else:
            L.ffn_gate = need(p + 'ffn_gate.weight', (hp.n_ff, hp.n_embd))
            L.ffn_up = need(p + 'ffn_up.weight', (hp.n_ff, hp.n_embd))
        L.ffn_down = need(p + 'ffn_down.weight', (hp.n_embd, hp.n_ff))
        return L

    def _layer(self, il, t, need):
        hp, L = self.hp, Layer()
        p = 'blk.%d.' % il
        q_dim, kv_dim, v_dim = hp.n_head * hp.head_k, hp.n_head_kv * hp.head_k, hp.n_head_kv * hp.head_v
        L.attn_norm = need(p + 'attn_norm.weight', (hp.n_embd,))
        L.recurrent, L.gated, L.moe, L.sinks, L.bo = hp.recurrent[il], bool(hp.fam.get('delta_net')), False, None, None
        if L.recurrent:
            self._delta_net_layer(L, p, need)
        elif L.gated:   # each head's query rows, then its gate's
            qg = need(p + 'attn_q.weight', (2 * q_dim, hp.n_embd)).reshape(hp.n_head, 2, hp.head_k, hp.n_embd)
            L.wq, L.wgate = qg[:, 0].reshape(q_dim, hp.n_embd), qg[:, 1].reshape(q_dim, hp.n_embd)
        if L.recurrent or L.gated:
            self._ffn_layer(L, p, need)
        if L.recurrent:
            return L
        if L.gated:
            L.wk = need(p + 'attn_k.weight', (kv_dim, hp.n_embd))
            L.wv = need(p + 'attn_v.weight', (v_dim, hp.n_embd))
            L.bq = L.bk = L.bv = None
            L.wo = need(p + 'attn_output.weight', (hp.n_embd, q_dim))
            L.q_norm = need(p + 'attn_q_norm.weight', (hp.head_k,))
            L.k_norm = need(p + 'attn_k_norm.weight', (hp.head_k,))
            return L
        if hp.arch == 'phi3' and t(p + 'attn_qkv.weight') is not None:
            qkv = need(p + 'attn_qkv.weight', (q_dim + kv_dim + v_dim, hp.n_embd))
            L.wq, L.wk, L.wv = qkv[:q_dim], qkv[q_dim:q_dim + kv_dim], qkv[q_dim + kv_dim:]
        else:
            L.wq = need(p + 'attn_q.weight', (q_dim, hp.n_embd))
            L.wk = need(p + 'attn_k.weight', (kv_dim, hp.n_embd))
            L.wv = need(p + 'attn_v.weight', (v_dim, hp.n_embd))
        L.bq, L.bk, L.bv = t(p + 'attn_q.bias'), t(p + 'attn_k.bias'), t(p + 'attn_v.bias')
        if hp.arch == 'qwen2' and (L.bq is None or L.bk is None or L.bv is None):
            raise ModelError('%s: qwen2 needs the q, k and v biases of layer %d' % (self.path, il))
        L.wo = need(p + 'attn_output.weight', (hp.n_embd, hp.n_head * hp.head_v))
        L.bo = t(p + 'attn_output.bias')
        if hp.fam['qk_norm'] == 'whole':
            L.q_norm = need(p + 'attn_q_norm.weight', (q_dim,))
            L.k_norm = need(p + 'attn_k_norm.weight', (kv_dim,))
        elif hp.fam['qk_norm']:
            L.q_norm = need(p + 'attn_q_norm.weight', (hp.head_k,))
            L.k_norm = need(p + 'attn_k_norm.weight', (hp.head_k,))
        if hp.fam['post_norms']:
            L.attn_post_norm = need(p + 'post_attention_norm.weight', (hp.n_embd,))
            L.ffn_post_norm = need(p + 'post_ffw_norm.weight', (hp.n_embd,))
        L.sinks = None
        if hp.fam.get('sinks'):   # gpt-oss: every bias and the sinks are required (llama.cpp)
            L.sinks = need(p + 'attn_sinks.weight', (hp.n_head,))
            L.bq, L.bk, L.bv = (need(p + 'attn_q.bias', (q_dim,)), need(p + 'attn_k.bias', (kv_dim,)),
                                need(p + 'attn_v.bias', (v_dim,)))
            L.bo = need(p + 'attn_output.bias', (hp.n_embd,))
        return self._ffn_layer(L, p, need)


# ---- the arithmetic ----

def rms_norm(x, w, eps):
    """x / sqrt(mean(x^2) + eps) * w over the last axis (GGUF stores Gemma's 1 + w already)."""
    return x / np.sqrt(np.add.reduce(x * x, axis=-1, keepdims=True) / x.shape[-1] + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_ggml_f16(x):
    """GELU as ggml's CPU backend computes it (GGML_GELU_FP16): the input rounded to a half,
    looked up in a table of halves. Not the reference: only to show that llama.cpp's Gemma
    logits differ from the reference's by this rounding (check_llamacpp.py)."""
    h = np.asarray(x).astype(np.float16).astype(np.float32)
    c = np.float32(math.sqrt(2.0 / math.pi))
    y = (np.float32(0.5) * h * (np.float32(1) + np.tanh(c * h * (np.float32(1) + np.float32(0.044715) * h * h))))
    y = y.astype(np.float16).astype(np.float64)
    return np.where(x <= -10.0, 0.0, np.where(x >= 10.0, x, y))


def silu(x):
    return x / (1.0 + np.exp(-x))


SWIGLU_OAI_ALPHA, SWIGLU_OAI_LIMIT = 1.702, 7.0


def swiglu_oai(gate, up):
    """gpt-oss's clamped SwiGLU (HF modeling_gpt_oss.py GptOssExperts; ggml_swiglu_oai with
    llama.cpp's alpha 1.702 and limit 7): the gate clamped above at 7, up to [-7, 7],
    gate * sigmoid(1.702 * gate) * (up + 1)."""
    x = np.minimum(gate, SWIGLU_OAI_LIMIT)
    y = np.clip(up, -SWIGLU_OAI_LIMIT, SWIGLU_OAI_LIMIT)
    return x / (1.0 + np.exp(-SWIGLU_OAI_ALPHA * x)) * (y + 1.0)


def yarn_params(n_rot, n_ctx_orig, base, freq_scale, beta_fast, beta_slow):
    """YaRN as ggml computes it (ggml.c ggml_rope_yarn_corr_dims, ggml-cpu rope_yarn, with the
    attention factor llama-context.cpp passes): (ramp, mscale). ramp[i] is how much of pair
    i keeps its original angle (1: all, extrapolated; 0: all divided by the factor,
    interpolated): 1 - clamp((i - low) / max(0.001, high - low), 0, 1), where low and high
    are the pairs that turn beta_fast and beta_slow times in the original context, rounded
    outwards (floor, ceil) and clamped to [0, n_rot - 1]. mscale multiplies cos and sin:
    1 + 0.1 ln(factor) (llama.cpp sets its attn_factor so that the net scale is that).
    The rounding is llama.cpp's: HF's YaRN rounds only when the config's truncate is true,
    and gpt-oss's config says false (for gpt-oss-20b ggml's [8, 18] against HF's
    [8.09, 17.4]). beta_fast and beta_slow are the file's keys (default 32 and 1);
    llama.cpp 0.4.0's gpt-oss does not read them and uses 32 and 1."""
    def corr_dim(n_turns):
        return n_rot * math.log(n_ctx_orig / (n_turns * 2 * math.pi)) / (2 * math.log(base))
    low = max(0.0, math.floor(corr_dim(beta_fast)))
    high = min(n_rot - 1.0, math.ceil(corr_dim(beta_slow)))
    ramp = 1.0 - np.clip((np.arange(n_rot // 2) - low) / max(0.001, high - low), 0.0, 1.0)
    return ramp, 1.0 + 0.1 * math.log(1.0 / freq_scale)


def rope(x, pos, hp, base, freq_scale, factors):
    """Rotates the first n_rot values of each head (rows of x) for position pos."""
    n_rot, half = hp.n_rot, hp.n_rot // 2
    inv_freq = base ** (-2.0 * np.arange(half) / n_rot)
    if factors is not None:
        inv_freq = inv_freq / factors
    theta = pos * inv_freq * freq_scale
    mscale = hp.attn_factor
    if hp.yarn is not None:   # each pair's angle between the extrapolated and interpolated one
        ramp, yarn_mscale = hp.yarn
        theta = theta * (1.0 - ramp) + (pos * inv_freq) * ramp
        mscale = mscale * yarn_mscale
    cos = (np.cos(theta) * mscale).astype(x.dtype)
    sin = (np.sin(theta) * mscale).astype(x.dtype)
    y = x.copy()
    if hp.fam['rope'] == 'norm':
        a, b = x[:, 0:n_rot:2], x[:, 1:n_rot:2]
        y[:, 0:n_rot:2], y[:, 1:n_rot:2] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = x[:, :half], x[:, half:n_rot]
        y[:, :half], y[:, half:n_rot] = a * cos - b * sin, a * sin + b * cos
    return y


def softcap(x, cap):
    return cap * np.tanh(x / cap) if cap else x


class Pass:
    """Runs the model one token at a time over a KV cache; emit(name, layer, array) is
    called with every named step of the positions that ask for them."""

    def __init__(self, model):
        self.m, self.pos = model, 0
        self.k_cache = [[] for _ in model.layers]   # per layer: (n_head_kv, head_k) per position
        self.v_cache = [[] for _ in model.layers]
        self.routes = []                            # (pos, layer, experts, gap): _moe
        self.sink_share = []                        # (pos, layer, (n_head,) the sinks' share)
        self.clamps = {'gate': 0, 'up': 0}          # chosen experts' values past the clamp
        hp = model.hp
        # a Gated DeltaNet layer's convolution inputs and each value head's state; and what
        # each position gave each value head (q, k, v, g, beta), for its effective attention
        self.dn_inputs = [[] for _ in model.layers]
        self.dn_state = [np.zeros((hp.dn_v_heads, hp.dn_head, hp.dn_head)) if L.recurrent else None
                         for L in model.layers]
        self.dn_seen = [[] for _ in model.layers]
        self.patch = None                           # activation patching: _patched

    def fork(self):
        """A copy of this pass at its position that runs on alone: what either runs next
        leaves the other as it was (the caches' lists and the recurrent states are copied;
        an array a cache holds is never changed once written)."""
        f = object.__new__(Pass)
        f.__dict__.update(self.__dict__)
        f.k_cache = [list(c) for c in self.k_cache]
        f.v_cache = [list(c) for c in self.v_cache]
        f.routes, f.sink_share, f.clamps = list(self.routes), list(self.sink_share), dict(self.clamps)
        f.dn_inputs = [list(c) for c in self.dn_inputs]
        f.dn_state = [None if s is None else s.copy() for s in self.dn_state]
        f.dn_seen = [list(c) for c in self.dn_seen]
        return f

    def _patched(self, site, il, value):
        """value, or what self.patch (site, layer, position, value) -> value puts in its
        place (activation patching: resid_pre, the stream entering layer il, il = the
        layer count: after the last; attn_out and mlp_out, what the attention and the
        feed-forward block add to the stream; kqv, the heads' outputs side by side before
        the output projection; q, k and v, an attention layer's heads (n_head or n_head_kv
        rows) after their norms, before RoPE: TransformerLens's hook_q, hook_k, hook_v)."""
        return value if self.patch is None else self.patch(site, il, self.pos, value)

    def step(self, token, emit=None):
        m, hp = self.m, self.m.hp
        e = emit or (lambda name, layer, value: None)
        if not 0 <= token < m.n_vocab:
            raise ModelError('token id %d is outside the vocabulary (0..%d)' % (token, m.n_vocab - 1))
        x = m.tok_embd[token].copy()
        e('inp_embd', -1, x)
        if hp.fam['embd_scale']:
            x = x * math.sqrt(hp.n_embd)
            e('inp_scaled', -1, x)
        for il, L in enumerate(m.layers):
            x = self._block(il, L, self._patched('resid_pre', il, x), e)
        x = rms_norm(self._patched('resid_pre', len(m.layers), x), m.output_norm, hp.eps)
        e('result_norm', -1, x)
        logits = softcap(m.output @ x, hp.final_softcap)
        e('result_output', -1, logits)
        self.pos += 1
        return logits

    def _delta_net(self, il, L, h, e):
        """A Gated DeltaNet (llama.cpp 0.4.0's qwen35.cpp build_layer_attn_linear and its
        fused gated_delta_net op): attn_qkv's channels convolved causally over the last
        conv_kernel tokens (oldest first, zeros before the first), SiLU; q and k L2-normed
        per head (the root at least eps); value head h reads q/k head h % group_count;
        beta = sigmoid, g = softplus(alpha + dt_bias) * a; the state S (head x head):
        S <- e^g S, u = beta (v - S^T k), S <- S + k u^T, o = S^T q / sqrt(head); each
        head's o RMSNormed with ssm_norm, times silu(z); ssm_out."""
        hp, m = self.m.hp, self.m
        nk, nv, d = hp.dn_k_heads, hp.dn_v_heads, hp.dn_head
        mixed = L.dn_qkv @ h
        ins = self.dn_inputs[il]
        ins.append(mixed)
        window = ins[-hp.dn_conv:]
        window = [np.zeros_like(mixed)] * (hp.dn_conv - len(window)) + window
        conv = silu(sum(L.dn_conv[:, j] * window[j] for j in range(hp.dn_conv)))
        e('conv_output_silu', il, conv)
        l2 = lambda x: x / np.maximum(np.sqrt(np.sum(x * x, axis=-1, keepdims=True)), hp.eps)
        q = l2(conv[:nk * d].reshape(nk, d))
        k = l2(conv[nk * d:2 * nk * d].reshape(nk, d))
        v = conv[2 * nk * d:].reshape(nv, d)
        beta = 1.0 / (1.0 + np.exp(-(L.dn_beta @ h)))
        a = L.dn_alpha @ h + L.dn_dt
        g = np.where(a > 20.0, a, np.log1p(np.exp(np.minimum(a, 20.0)))) * L.dn_a
        z = L.dn_z @ h
        S, out = self.dn_state[il], np.zeros((nv, d))
        seen = []
        for j in range(nv):
            qj, kj = q[j % nk], k[j % nk]
            S[j] *= math.exp(g[j])
            u = beta[j] * (v[j] - S[j].T @ kj)
            S[j] += np.outer(kj, u)
            out[j] = S[j].T @ qj / math.sqrt(d)
            seen.append((qj, kj, v[j], g[j], beta[j]))
        self.dn_seen[il].append(seen)
        e('attn_output', il, out)
        out = rms_norm(out, L.dn_norm, hp.eps) * silu(z.reshape(nv, d))
        e('attn_gated', il, out)
        out = self._patched('kqv', il, out.reshape(-1))
        return L.wo @ out

    def effective(self, il, j, t):
        """Value head j of Gated DeltaNet layer il at position t (run): how much each
        position s's value adds to the head's output o_t (before its norm), by finite
        differences: the recurrence again from the state at 0 (zeros) with q, k, g, beta as
        the pass had them and one value changed by 1 at a time (o_t is linear in the values:
        the difference is the weight, exact in float64). Returns (t + 1,) weights."""
        seen = [self.dn_seen[il][s][j] for s in range(t + 1)]
        d = self.m.hp.dn_head

        def out_t(vs):
            S = np.zeros((d, d))
            for (q, k, _, g, beta), v in zip(seen, vs):
                S = math.exp(g) * S
                S = S + np.outer(k, beta * (v - S.T @ k))
            return S.T @ seen[t][0] / math.sqrt(d)
        vs = [s[2].copy() for s in seen]
        base = out_t(vs)
        w = np.zeros(t + 1)
        for s in range(t + 1):
            vs[s][0] += 1.0
            w[s] = out_t(vs)[0] - base[0]
            vs[s][0] -= 1.0
        return w

    def _block(self, il, L, x, e):
        hp, pos = self.m.hp, self.pos
        h = rms_norm(x, L.attn_norm, hp.eps)
        e('attn_norm', il, h)
        if L.recurrent:
            out = self._delta_net(il, L, h, e)
            e('kqv_out', il, out)
            x = x + self._patched('attn_out', il, out)
            e('ffn_inp', il, x)
            return self._ffn(il, L, x, e)
        q, k, v = L.wq @ h, L.wk @ h, L.wv @ h
        if L.bq is not None:
            q = q + L.bq
        if L.bk is not None:
            k = k + L.bk
        if L.bv is not None:
            v = v + L.bv
        if hp.fam['qk_norm'] == 'whole':   # OLMoE: the whole vectors, before the heads
            q, k = rms_norm(q, L.q_norm, hp.eps), rms_norm(k, L.k_norm, hp.eps)
        q = q.reshape(hp.n_head, hp.head_k)
        k = k.reshape(hp.n_head_kv, hp.head_k)
        v = v.reshape(hp.n_head_kv, hp.head_v)
        if hp.fam['qk_norm'] == 'whole':
            e('Qcur_normed', il, q)
            e('Kcur_normed', il, k)
        elif hp.fam['qk_norm']:
            q, k = rms_norm(q, L.q_norm, hp.eps), rms_norm(k, L.k_norm, hp.eps)
            e('Qcur_normed', il, q)
            e('Kcur_normed', il, k)
        base, freq_scale = hp.rope_params(il)
        q, k, v = self._patched('q', il, q), self._patched('k', il, k), self._patched('v', il, v)
        q = rope(q, pos, hp, base, freq_scale, self.m.rope_factors)
        k = rope(k, pos, hp, base, freq_scale, self.m.rope_factors)
        e('Qcur', il, q)
        e('Kcur', il, k)
        e('Vcur', il, v)
        self.k_cache[il].append(k)
        self.v_cache[il].append(v)
        kqv = self._attention(il, q, e)
        if L.gated:   # Qwen 3.5's output gate: sigmoid of the gate rows' products
            gate = (L.wgate @ h).reshape(hp.n_head, hp.head_k)
            kqv = kqv / (1.0 + np.exp(-gate))
            e('attn_gated', il, kqv)
        out = L.wo @ self._patched('kqv', il, kqv.reshape(-1))
        if L.bo is not None:
            out = out + L.bo
        e('kqv_out', il, out)
        if hp.fam['post_norms']:
            out = rms_norm(out, L.attn_post_norm, hp.eps)
            e('attn_post_norm', il, out)
        x = x + self._patched('attn_out', il, out)
        e('ffn_inp', il, x)
        return self._ffn(il, L, x, e)

    def _attention(self, il, q, e):
        """Scores over keys 0..pos (keys outside a sliding window are masked: a query at p
        sees p - n_swa + 1 .. p), softmax, weighted values; returns kqv (n_head, head_v).
        With sinks (gpt-oss), each head's sink is one more logit in its softmax's
        denominator, beside the scaled scores, and weighs no value."""
        hp, pos = self.m.hp, self.pos
        K = np.stack(self.k_cache[il], axis=1)   # (n_head_kv, pos + 1, head_k)
        V = np.stack(self.v_cache[il], axis=1)   # (n_head_kv, pos + 1, head_v)
        group = hp.n_head // hp.n_head_kv
        kv_of = np.arange(hp.n_head) // group
        scores = np.einsum('hd,htd->ht', q, K[kv_of]) * hp.kq_scale
        scores = softcap(scores, hp.attn_softcap)
        visible = np.ones(pos + 1, bool)
        if hp.sliding(il):
            visible = (pos - np.arange(pos + 1)) < hp.n_swa
        masked = np.where(visible[None, :], scores, -np.inf)
        e('kq', il, np.where(visible[None, :], scores, np.nan))
        L = self.m.layers[il]
        if L.sinks is None:
            w = np.exp(masked - masked.max(axis=1, keepdims=True))
            w = w / w.sum(axis=1, keepdims=True)
        else:
            top = np.maximum(masked.max(axis=1), L.sinks)[:, None]
            w = np.exp(masked - top)
            sink = np.exp(L.sinks[:, None] - top)
            w = w / (w.sum(axis=1, keepdims=True) + sink)
            self.sink_share.append((self.pos, il, 1.0 - w.sum(axis=1)))
        e('kq_soft_max', il, w)
        kqv = np.einsum('ht,htd->hd', w, V[kv_of])
        e('kqv', il, kqv)
        return kqv

    def _ffn(self, il, L, x, e):
        hp = self.m.hp
        h = rms_norm(x, L.ffn_norm, hp.eps)
        e('ffn_norm', il, h)
        if L.moe:
            out = self._moe(il, L, h, e)
            if L.shexp:   # qwen35moe: the shared expert, times the sigmoid of its gate
                s = L.down_shexp @ (silu(L.gate_shexp @ h) * (L.up_shexp @ h))
                e('ffn_shexp', il, s)
                out = out + s / (1.0 + math.exp(-float(L.gate_inp_shexp @ h)))
                e('ffn_out', il, out)
            x = x + self._patched('mlp_out', il, out)
            e('l_out', il, x)
            return x
        gate, up = L.ffn_gate @ h, L.ffn_up @ h
        e('ffn_gate', il, gate)
        e('ffn_up', il, up)
        act = silu(gate) if hp.fam['act'] == 'silu' else self.m.gelu(gate)
        par = act * up
        e('ffn_gate_par', il, par)
        out = L.ffn_down @ par
        e('ffn_out', il, out)
        if hp.fam['post_norms']:
            out = rms_norm(out, L.ffn_post_norm, hp.eps)
            e('ffn_post_norm', il, out)
        x = x + self._patched('mlp_out', il, out)
        e('l_out', il, x)
        return x


    def _moe(self, il, L, h, e):
        """The mixture-of-experts feed-forward (llama.cpp's build_moe_ffn, softmax gating):
        softmax over every expert's logit, the n_expert_used most probable in descending
        order, their probabilities as weights (renormalised to sum 1 where the family does:
        llama.cpp clamps the sum at 6.1e-5), and the weighted sum of each chosen expert's
        SwiGLU feed-forward. Records the route in self.routes: (pos, layer, chosen ids, the
        log-probability gap between the last chosen expert and the next: how far the
        choice is from a tie).

        gpt-oss (gating 'softmax_weight', HF GptOssTopKRouter, llama.cpp's
        LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT): the router's logits plus its bias,
        the n_expert_used largest, weighted by a softmax over those k logits; each expert
        gate and up plus their biases, swiglu_oai, down plus its bias. ffn_moe_probs is
        still the softmax over all the experts (the same order, and log-probability gaps
        that are the logits' gaps)."""
        hp = self.m.hp
        logits = L.gate_inp @ h
        e('ffn_moe_logits', il, logits)
        if L.gate_inp_b is not None:
            logits = logits + L.gate_inp_b
            e('ffn_moe_logits_biased', il, logits)
        probs = np.exp(logits - logits.max())
        probs = probs / probs.sum()
        e('ffn_moe_probs', il, probs)
        order = np.argsort(-probs, kind='stable')
        topk = order[:hp.n_expert_used]
        e('ffn_moe_topk', il, topk.astype(np.float64))
        nxt = probs[order[hp.n_expert_used]] if hp.n_expert_used < hp.n_expert else 0.0
        gap = math.log(probs[topk[-1]]) - math.log(nxt) if nxt > 0 else math.inf
        self.routes.append((self.pos, il, [int(i) for i in topk], gap))
        w = probs[topk]
        if hp.fam.get('gating') == 'softmax_weight':
            w = np.exp(logits[topk] - logits[topk].max())
            w = w / w.sum()
        if hp.fam['norm_w']:
            w = w / max(w.sum(), 6.103515625e-5)
        e('ffn_moe_weights', il, w)
        out = np.zeros(hp.n_embd, h.dtype)
        each = np.zeros((hp.n_expert, hp.n_embd), h.dtype) if self.patch else None
        for j, ex in enumerate(topk):
            gate, up = L.gate_exps[ex] @ h, L.up_exps[ex] @ h
            if hp.fam['act'] == 'swiglu_oai':
                gate, up = gate + L.gate_b[ex], up + L.up_b[ex]
                self.clamps['gate'] += int((gate > SWIGLU_OAI_LIMIT).sum())
                self.clamps['up'] += int((np.abs(up) > SWIGLU_OAI_LIMIT).sum())
                y = L.down_exps[ex] @ swiglu_oai(gate, up) + L.down_b[ex]
            else:
                y = L.down_exps[ex] @ (silu(gate) * up)
            out = out + w[j] * y
            if each is not None:
                each[ex] = w[j] * y
        if each is not None:   # activation patching: each expert's weighted output, 0 unchosen
            out = self._patched('expert', il, each).sum(axis=0)
        e('ffn_moe_out', il, out)
        return out


# ---- front end ----

def tensor_record(name, layer, pos, value):
    v = np.asarray(value, np.float64)
    vals = [None if math.isnan(a) else float('%.9g' % a) for a in v.reshape(-1).tolist()]
    return json.dumps({'name': name, 'layer': layer, 'pos': pos, 'shape': list(v.shape), 'values': vals})


def run_tensors(model, ids, pos, layers, out):
    p = Pass(model)
    for i, tok in enumerate(ids[:pos + 1]):
        emit = None
        if i == pos:
            def emit(name, layer, value, i=i):
                if layer < 0 or layers is None or layers[0] <= layer <= layers[1]:
                    out.write(tensor_record(name, layer, i, value) + '\n')
        p.step(tok, emit)


def run_greedy(model, ids, n, stop=True):
    """(new ids, margins): the prompt, then n argmax choices."""
    p = Pass(model)
    logits = None
    for tok in ids:
        logits = p.step(tok)
    new, margins = [], []
    for _ in range(n):
        top2 = np.argsort(logits)[-2:]
        best = int(top2[1])
        new.append(best)
        margins.append(float(logits[top2[1]] - logits[top2[0]]))
        if stop and best in model.hp.eog:
            break
        if len(new) < n:
            logits = p.step(best)
    return new, margins


def log_softmax_at(logits, token):
    mx = logits.max()
    return logits[token] - mx - math.log(np.exp(logits - mx).sum())


def run_nll(model, ids):
    """Teacher-forced: the mean negative log-likelihood of ids[1:] given what precedes."""
    p, total = Pass(model), 0.0
    for t, tok in enumerate(ids[:-1]):
        total -= log_softmax_at(p.step(tok), ids[t + 1])
    return total / (len(ids) - 1)


def parse_ids(s):
    if s.startswith('@'):
        s = open(s[1:]).read()
    ids = [int(x) for x in s.replace(',', ' ').split()]
    if not ids:
        raise ModelError('no token ids given')
    return ids


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('model')
    ap.add_argument('--ids', required=True, help='token ids, comma- or space-separated, or @FILE')
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument('--tensors', nargs='?', type=int, const=-1, metavar='POS',
                      help='the steps of position POS (default: the last id\'s)')
    mode.add_argument('--greedy', type=int, metavar='N')
    mode.add_argument('--logits', action='store_true')
    mode.add_argument('--nll', action='store_true')
    ap.add_argument('--layers', help='A-B: only these layers\' steps (with --tensors)')
    ap.add_argument('--ctx', type=int, help='the context length the model runs with')
    ap.add_argument('--json', action='store_true', help='--greedy: one JSON object with margins')
    ap.add_argument('--dtype', choices=('float64', 'float32'), default='float64',
                    help='float32: compute in single precision (to see its rounding; not the reference)')
    ap.add_argument('--gelu', choices=('tanh', 'ggml-f16'), default='tanh',
                    help='ggml-f16: llama.cpp\'s half-precision GELU table instead of the formula (diagnosis only)')
    ap.add_argument('--no-stop', action='store_true', help='--greedy: go on past end-of-generation ids')
    a = ap.parse_args(argv)
    try:
        ids = parse_ids(a.ids)
        model = Model(a.model, a.ctx, a.gelu, np.dtype(a.dtype).type)
        if a.tensors is not None:
            pos = len(ids) - 1 if a.tensors == -1 else a.tensors
            if not 0 <= pos < len(ids):
                raise ModelError('position %d is past the last id (%d ids)' % (pos, len(ids)))
            layers = None
            if a.layers:
                lo, _, hi = a.layers.partition('-')
                layers = (int(lo), int(hi or lo))
            run_tensors(model, ids, pos, layers, sys.stdout)
        elif a.greedy is not None:
            new, margins = run_greedy(model, ids, a.greedy, stop=not a.no_stop)
            if a.json:
                print(json.dumps({'prompt_ids': ids, 'ids': new, 'margins': [round(x, 6) for x in margins]}))
            else:
                print(' '.join(map(str, new)))
        elif a.nll:
            if len(ids) < 2:
                raise ModelError('--nll needs at least two ids')
            nll = run_nll(model, ids)
            print(json.dumps({'tokens': len(ids) - 1, 'nll': nll, 'ppl': math.exp(nll)}))
        else:
            p = Pass(model)
            for tok in ids:
                logits = p.step(tok)
            print(json.dumps([float('%.9g' % x) for x in logits]))
    except BrokenPipeError:   # the reader stopped early (| head): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ModelError, gguf.GGUFError, OSError, ValueError) as err:
        print('forward.py: %s' % err, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
