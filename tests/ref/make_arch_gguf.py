#!/usr/bin/env python3
"""make_arch_gguf.py — writes a tiny random-weight GGUF model of one family, all tensors F32,
with the tensor names, shapes and metadata keys llama.cpp's convert_hf_to_gguf.py writes for
that family (checked against llama.cpp's src/llama-arch.cpp and llama-model.cpp tensor
tables at ggerganov/llama.cpp@c392e509, and upstream's for qwen3 and gemma3):

    make_arch_gguf.py ARCH OUT.gguf [--seed N] [--vocab VOCAB.gguf[.gz]] [--list]

ARCH is llama, qwen2, qwen3, phi3, phi3-k (phi3 with rows of 256 values, which llama-quantize
can make K-quants of), phi3-partial (Phi-4-mini's partial rotary: 3/4 of each head, no sliding
window), gemma, gemma2, gemma3, or one of the mixture-of-experts fixtures qwen3moe, olmoe,
mixtral (a llama file with experts) and gpt-oss, the hybrid qwen35 (qwen35moe: with experts and a shared expert), gemma4 or
gemma4moe (Gemma 4 with experts, in Gemma-4-26B-A4B's layout; its file says gemma4) (--list
prints each one's shape). Which tensors and keys a
family's file holds (biases, q/k norms, post-norms, fused tensors, LongRoPE's, windows,
soft-caps, the keys its converter writes) is its row of llmchat's family table
(src/formats/model_family.c, read by family_rows.py), the description llmchat's loader reads;
a shape here holds what a published model chooses (sizes, head size, epsilon, RoPE base and
scaling, window, a tied classifier, LongRoPE's factors). The vocabulary's tokenizer.* keys are
copied unchanged: the SentencePiece families take
stories260K's 512-token one (tests/data/stories260K.gguf), the byte-level BPE ones (qwen2,
qwen3) GPT-2's 50,257 tokens (tests/data/gpt2-vocab.gguf.gz, read compressed) with
tokenizer.ggml.pre set to qwen2 and no BOS, as Qwen's converter writes; --vocab picks
another file. Gemma's files store their RMSNorm weights as 1 + w (the converter adds 1):
so do these.

Weights come from numpy's RandomState(seed) (the legacy Mersenne Twister stream numpy keeps
frozen: the same file on every machine; --seed defaults to 1): matrices are
N(0, (gain / sqrt(cols))^2), with gains large enough that attention is peaked and the
logits have clear winners (greedy choices are not near-ties), norm weights 1 + N(0, 0.1^2),
biases N(0, 0.5^2). For other tensor types, quantize the file with llama.cpp's
llama-quantize (rows of 64 values are too short for the K-quants, which it then replaces).

The mixture-of-experts fixtures are not random: they are the trained stories260K
(tests/data/stories260K.gguf: dim 64, 5 layers, 8 heads / 4 KV heads of 8, hidden 172, its
512-token SentencePiece vocabulary) arranged into the family's layout (moe_from_trained
below): its embeddings, attention, norms and classifier as they are (q and k rows reordered
from llama's interleaved pairs to the halves of NEOX for qwen3moe and olmoe, which add q/k
norm weights), and each layer's feed-forward turned into experts that differ (each one a
seeded random subset of the trained hidden units, its weights perturbed) behind a random
router large enough that routing is decisive. gpt-oss adds what its row of the family
table asks for (llama.cpp 0.4.0's src/models/openai-moe.cpp loads all of it; its
conversion/gpt_oss.py and base.py write the keys): q/k/v and attn_output biases, attention
sinks (attn_sinks, one logit per head), the trained ffn_norm under the name
post_attention_norm, a router bias and the experts' gate, up and down biases; the keys
sliding_window (8: layers 0, 2, 4 slide), expert_feed_forward_length, key_length /
value_length and YaRN's (rope.scaling.type yarn, factor 8, original_context_length 64,
yarn_beta_fast 32 and yarn_beta_slow 1, as gpt-oss's config has them; context_length 512).
BIAS_GAIN and what follows it say the sizes.
Python 3 with numpy.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import family_rows  # noqa: E402
import gguf  # noqa: E402
from gguf import pack_kv, copy_kv, UINT32, INT32, FLOAT32, STRING, BOOL, ARRAY  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'data')
SPM_VOCAB = os.path.join(DATA, 'stories260K.gguf')
TRAINED = os.path.join(DATA, 'stories260K.gguf')
BPE_VOCAB = os.path.join(DATA, 'gpt2-vocab.gguf.gz')

# Each family's tiny shape and what it writes beside what its family's row says. head: the
# head size (written as key_length / value_length where key_length is set); rot:
# rope.dimension_count (for a family whose converter writes it); eps: 1e-5 unless set.
SHAPES = {
    'llama':  dict(arch='llama', vocab='spm', dim=64, ff=160, layers=3, heads=4, kv=2, head=16,
                   ctx=2048, base=10000.0, tied=False),
    'qwen2':  dict(arch='qwen2', vocab='bpe', dim=64, ff=160, layers=2, heads=4, kv=2, head=16,
                   ctx=32768, base=1000000.0, tied=True, eps=1e-6),
    'qwen3':  dict(arch='qwen3', vocab='bpe', dim=64, ff=160, layers=2, heads=4, kv=2, head=32,
                   ctx=40960, base=1000000.0, tied=True, key_length=True, eps=1e-6),
    'phi3':   dict(arch='phi3', vocab='spm', dim=64, ff=128, layers=2, heads=4, kv=2, head=16,
                   ctx=4096, orig_ctx=64, base=10000.0, tied=False, swa=16, longrope=True),
    'phi3-k': dict(arch='phi3', vocab='spm', dim=256, ff=256, layers=2, heads=4, kv=2, head=64,
                   ctx=4096, orig_ctx=64, base=10000.0, tied=False, swa=16, longrope=True),
    'phi3-partial': dict(arch='phi3', vocab='spm', dim=64, ff=128, layers=2, heads=4, kv=2, head=16,
                         rot=12, ctx=4096, base=10000.0, tied=False, swa=0),
    'gemma':  dict(embd_std=0.1, out_norm_gain=8.0, arch='gemma', vocab='spm', dim=64, ff=128, layers=2, heads=4, kv=1, head=32,
                   ctx=8192, tied=True, key_length=True, norm_shift=True, eps=1e-6),
    'gemma2': dict(embd_std=0.1, out_norm_gain=8.0, arch='gemma2', vocab='spm', dim=64, ff=128, layers=26, heads=4, kv=2, head=32,
                   ctx=8192, tied=True, key_length=True, norm_shift=True, swa=8, eps=1e-6),
    'gemma3': dict(embd_std=0.1, out_norm_gain=8.0, qk_norm_gain=3.0, arch='gemma3', vocab='spm', dim=64, ff=128, layers=8, heads=4, kv=2, head=32,
                   ctx=32768, base=1000000.0, tied=True, key_length=True, norm_shift=True,
                   swa=8, linear_scale=8.0, eps=1e-6),
}
# The mixture-of-experts fixtures (from TRAINED, see moe_from_trained): experts, the experts
# each token uses, their hidden size (a multiple of 32: Q8_0 blocks), and what the file says
# of the dense size (qwen3moe: feed_forward_length is the trained 172, the experts' size is
# expert_feed_forward_length, as Qwen3-30B-A3B's 6144 and 768; gpt-oss writes its
# intermediate_size as both, as its converter does). gpt-oss: swa is the window of its
# even layers, yarn the YaRN factor over orig_ctx (ctx = orig_ctx x yarn, as gpt-oss's
# 131072 = 32 x 4096). dim, layers, heads, kv,
# head, ctx, base and eps are the trained model's, except olmoe's 8 KV heads: llama.cpp's
# OLMoE has no grouped-query attention (attn_k_norm is n_embd wide), so each trained KV
# head's k and v rows are there twice (the same attention).
MOE = dict(vocab='spm', dim=64, layers=5, heads=8, kv=4, head=8, ctx=2048, base=10000.0, tied=False,
           eps=float(np.float32(1e-5)), trained=True)
SHAPES.update({
    'qwen3moe': dict(MOE, arch='qwen3moe', experts=16, used=4, ff_exp=96, ff=172, key_length=True),
    'olmoe':    dict(MOE, arch='olmoe', kv=8, experts=8, used=4, ff_exp=96, ff=96),
    'mixtral':  dict(MOE, arch='llama', experts=8, used=2, ff_exp=128, ff=128),
    'qwen2moe': dict(MOE, arch='qwen2moe', experts=8, used=2, ff_exp=96, ff=172, ff_shexp=128),
    'gpt-oss':  dict(MOE, arch='gpt-oss', experts=16, used=4, ff_exp=96, ff=96, key_length=True, ctx=512,
                     swa=8, yarn=8.0, orig_ctx=64),
})
# The hybrid fixture (Qwen 3.5's qwen35, from TRAINED, see hybrid_from_trained): every
# attn_every-th layer gated attention (the trained attention; RoPE over rot of the head's 8
# values, in sections of 1 and 1 pair: interleaved multimodal RoPE turns both with the
# position), the others Gated DeltaNets of dn_k q/k heads and dn_v value heads of 8 values,
# convolved over dn_conv tokens. Nothing else differs from the trained model.
SHAPES.update({
    'qwen35': dict(MOE, arch='qwen35', ff=172, key_length=True, rot=4, sections=(1, 1, 0, 0),
                   attn_every=2, dn_conv=4, dn_k=4, dn_v=8),
})
# Qwen 3.5 MoE (qwen35moe): the hybrid fixture with the feed-forward of the MoE fixtures
# (experts of ff_exp units, the experts each token uses) and a shared expert of ff_shexp
# units beside them (see hybrid_from_trained).
SHAPES['qwen35moe'] = dict(SHAPES['qwen35'], arch='qwen35moe', experts=8, used=2, ff_exp=96, ff_shexp=128)
SHEXP_GATE_GAIN = 2.0   # the shared expert's gate: sigmoids across most of (0, 1)
# The Gemma 4 fixture (gemma4, from TRAINED, see gemma4_from_trained): layers whose
# sliding flags are `slides` (window swa), the sliding ones with the trained heads (8 of 8
# values, 4 KV heads, RoPE over all 8 with base base_swa), the global ones with heads of
# head_full values (the trained head's 8 and 8 more) read by kv_full KV heads, RoPE over
# them with base base and rope_freqs that leave all but the first rot_pairs pairs unturned
# (Gemma 4's proportional RoPE); the last `shared` layers read the KV caches of the last
# earlier sliding and global layer; layer 2 (global, its own cache) has no attn_v (its keys
# are its values); ff per layer (the shared layers' feed-forward twice as wide: the trained
# units twice, the copies perturbed, down halved); per-layer inputs of ple values;
# layer_output_scale on layers out_scaled; the final logits soft-capped at softcap.
SHAPES.update({
    'gemma4': dict(MOE, arch='gemma4', key_length=True, slides=(1, 1, 0, 1, 0), swa=16,
                   head_full=16, kv_full=2, rot_pairs=2, base=1000000.0, base_swa=10000.0,
                   shared=2, ff=(172, 172, 172, 344, 344), ple=8, out_scaled=(0, 1, 3),
                   softcap=30.0, no_v=(2,), no_space_prefix=True),
})
# Gemma 4 with experts (gemma4moe, laid out as Gemma-4-26B-A4B: general.architecture is
# gemma4): the gemma4 fixture's sliding and global layers, heads, layer 2 without attn_v,
# layer output scales and soft-cap, but no layer reading another's KV cache (shared 0), no
# per-layer inputs (ple 0: the key written as 0, no per_layer_* tensors) and every layer's
# dense feed-forward the trained 172 units (feed_forward_length one number, as the
# converter writes it without use_double_wide_mlp); every layer a MoE layer: beside the
# dense feed-forward (26B-A4B's "shared expert") a router over `experts` experts of ff_exp
# units, `used` of them a token, with the gate and up rows of each expert fused into
# ffn_gate_up_exps (its ff_exp gate rows, then its ff_exp up rows: the converter's
# experts.gate_up_proj) and a per-expert output scale ffn_down_exps.scale (HF's
# router.per_expert_scale). See gemma4_from_trained and the G4_MOE_* sizes.
SHAPES['gemma4moe'] = dict(SHAPES['gemma4'], shared=0, ple=0, ff=172, experts=8, used=2, ff_exp=96)
# Its sizes: q/k norm weights Q_NORM_GAIN / K_NORM_GAIN (queries are not scaled: the
# scores come out larger than the trained ones, which made the text more like the trained
# model's than smaller ones did); the global heads' 8 extra rows N(0, (G4_EXTRA /
# sqrt(dim))^2); each layer's post-norms G4_POST_ATTN and G4_POST_FFN x (1 + N(0, 0.1^2)):
# the RMS of the trained layer's attention and feed-forward outputs (llmchat -m tensors,
# kqv_out and ffn_out on a story); the feed-forward's gate rows divided by G4_GELU and
# down rows multiplied by it, gelu(x / 1.702) 1.702 being about silu(x); the per-layer
# inputs: per_layer_token_embd N(0, 1), the projections at gain 1, their post-norm
# G4_PLE_NORM; layer_output_scale G4_OUT_SCALE; the embeddings divided by sqrt(dim),
# which Gemma multiplies back.
G4_EXTRA, G4_PLE_NORM, G4_OUT_SCALE = 0.5, 0.05, (0.9, 0.95, 0.85)
G4_POST_ATTN = (0.18, 0.14, 0.14, 0.21, 0.30)
G4_POST_FFN = (0.32, 0.24, 0.30, 0.47, 1.05)
G4_GELU = 1.702
# gemma4moe's MoE layers (llama.cpp 0.4.0's src/models/gemma4.cpp; x the stream after
# attention and its residual): mlp = post_ffw_norm_1(the dense GELU feed-forward of
# ffn_norm(x)); the router's logits ffn_gate_inp . (rms_norm(x) / sqrt(dim) x
# ffn_gate_inp.scale), softmax, the top `used`, their weights renormalised to sum 1; each
# chosen expert e on pre_ffw_norm_2(x): down_e(gelu(gate_e h) x up_e h) x
# ffn_down_exps.scale[e]; moe = post_ffw_norm_2(the weighted sum); x += post_ffw_norm(mlp +
# moe). Sizes: the dense feed-forward the trained one (gate / G4_GELU, down x G4_GELU, as
# gemma4's); the experts as the MoE fixtures' (experts_from_trained: each a seeded subset of
# ff_exp trained units, EXPERT_NOISE, down x 172 / ff_exp) with the same G4_GELU scaling;
# router rows N(0, (ROUTER_GAIN / sqrt(dim))^2) and ffn_gate_inp.scale sqrt(dim) x (1 +
# N(0, 0.1^2)): the router sees a unit-RMS x, logits of a few units; ffn_down_exps.scale
# uniform in G4_MOE_DOWN_SCALE (so that it changes the mix of the two experts);
# pre_ffw_norm_2 1 x, post_ffw_norm_1 G4_MOE_POST_1 x and post_ffw_norm_2 G4_MOE_POST_2 x
# (1 + N(0, 0.1^2)): the experts' part of the feed-forward 0.4 of the dense one's (at 0.5,
# tried first, no prompt of make_llamacpp_goldens.py's GEMMA4 ran free of BOS and of
# near-ties, at 0.3 one: see GEMMA4_MOE there); post_ffw_norm G4_POST_FFN as gemma4's.
G4_MOE_POST_1, G4_MOE_POST_2, G4_MOE_DOWN_SCALE = 1.0, 0.4, (0.5, 1.5)
# A DeltaNet layer: q, k, v from the trained layer's (q: the query heads reading KV heads
# 0-3, k and v the KV heads', v twice as llama.cpp tiles value heads over q/k heads, the
# second copy with DN_V_NOISE relative noise), ssm_out the trained output's columns of the
# query head each value head stands for; the output gate z N(0, (DN_Z_GAIN / sqrt(dim))^2);
# beta and alpha N(0, (1 / sqrt(dim))^2); dt_bias N(0, 0.5^2); a = -A with A uniform in
# DN_A: decays exp(-A softplus(.)) from about 0.98 to 0.4 a token, so that the state
# remembers some tokens for long and others briefly; the convolution's last tap 1 + N(0,
# 0.1^2) (the token itself), the others N(0, DN_CONV_GAIN^2); ssm_norm 1 + N(0, 0.1^2).
DN_V_NOISE, DN_Z_GAIN, DN_CONV_GAIN, DN_A = 0.2, 3.0, 0.3, (0.02, 1.0)
# Each expert: EXPERT_NOISE relative noise on its weights; its down projection scaled by
# 172 / ff_exp (it holds only part of the hidden units). The router: rows
# N(0, (ROUTER_GAIN / sqrt(dim))^2): logits of a few units (ffn_norm's output has an RMS of
# 0.55-0.97 in the trained model), so that the top experts stand clear of the rest. The q/k
# norm weights: Q_NORM_GAIN / K_NORM_GAIN per layer (the RMS of the trained q and k per
# head, measured on a story: unit-RMS q and k would make the attention flat) × (1 + 0.05 N).
EXPERT_NOISE = 0.1
ROUTER_GAIN = 6.0
Q_NORM_GAIN = (3.5, 5.3, 3.9, 5.3, 3.3)
K_NORM_GAIN = (4.7, 6.7, 4.7, 5.6, 3.7)
# gpt-oss (the same trained model; what its row adds, in moe_from_trained): each bias
# N(0, (BIAS_GAIN[t] x the RMS of its matrix's row lengths)^2), an output's size for an
# input of unit RMS (up's biases are -1 + N(0, 0.1^2) instead, so that the clamped
# SwiGLU's (up + 1) is about the trained up); the router's bias N(0, OSS_ROUTER_BIAS^2);
# in each layer OSS_LOUD experts (seeded) with gate and up rows OSS_LOUD_GAIN times larger
# and down rows that squared smaller, so that some gate and up values pass the clamp at
# +-7; the sinks OSS_SINKS in every layer, each layer's own order of heads: beside scores
# of a few units, a head's sink takes from under 1% to over 95% of its softmax.
BIAS_GAIN = dict(q=0.3, k=0.3, v=0.3, o=0.3, gate=0.3, down=0.3)
OSS_LOUD, OSS_LOUD_GAIN = 4, 3.0
OSS_SINKS = (-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
OSS_ROUTER_BIAS = 1.0
# Gemma multiplies the embeddings by sqrt(dim) and ties the output to them: with N(0, 1)
# embeddings the residual stream would be mostly the input token's own row and the model
# would repeat it. Its embeddings are N(0, 0.1^2) instead, and its final norm weights 8
# times larger, so that the logits still have clear winners. Gemma 3's q and k norms make
# every score small (unit-RMS q and k) and the attention flat: its q/k norm weights are 3
# times larger.
# Gains of the matrices (see the docstring); q and k larger so that attention is peaked.
GAIN = dict(q=2.0, k=2.0, v=1.5, o=1.5, gate=2.0, up=2.0, down=1.5, output=4.0)
# The families' rows (src/formats/model_family.c), read once.
FAMILIES = family_rows.read()


class Weights:
    """Draws the tensors in a fixed order from one RandomState."""

    def __init__(self, seed):
        self.rng, self.tensors = np.random.RandomState(seed), []

    def mat(self, name, rows, cols, gain):
        w = self.rng.standard_normal((rows, cols)) * (gain / np.sqrt(cols))
        self.tensors.append((name, w.astype(np.float32), 'F32'))

    def norm(self, name, n, gain=1.0):
        w = gain * (1.0 + 0.1 * self.rng.standard_normal(n))
        self.tensors.append((name, w.astype(np.float32), 'F32'))

    def vec(self, name, values):
        self.tensors.append((name, np.asarray(values, np.float32), 'F32'))


def vocab_records(s, vocab_path):
    """The vocabulary's tokenizer.* records (and their count), as the family's converter
    would set them."""
    v = gguf.GGUFFile(vocab_path)
    keys = [k for k in v.meta if k.startswith('tokenizer.')]
    if 'tokenizer.ggml.tokens' not in v.meta:
        raise SystemExit('%s has no tokenizer.ggml.tokens' % vocab_path)
    records = []
    for k in keys:
        if s['vocab'] == 'bpe' and k in ('tokenizer.ggml.pre', 'tokenizer.ggml.add_bos_token'):
            continue
        if (s.get('norm_shift') or s.get('no_space_prefix')) and k == 'tokenizer.ggml.add_space_prefix':
            continue
        records.append(copy_kv(v, k))
    if s['vocab'] == 'bpe':   # Qwen2Model.set_vocab: the qwen2 pre-tokenizer, no BOS added
        records.append(pack_kv('tokenizer.ggml.pre', STRING, 'qwen2'))
        records.append(pack_kv('tokenizer.ggml.add_bos_token', BOOL, False))
    if s.get('norm_shift') or s.get('no_space_prefix'):   # Gemma's set_vocab: no dummy-prefix space
        records.append(pack_kv('tokenizer.ggml.add_space_prefix', BOOL, False))
    return records, len(v.meta['tokenizer.ggml.tokens'])


def metadata(name, s):
    """The family's keys. general.name leaves the family out: llama.cpp's vocabulary loader
    looks for Phi-3's special tokens in any model whose name says phi3."""
    a, f = s['arch'], FAMILIES[s['arch']]
    u32 = lambda k, x: pack_kv('%s.%s' % (a, k), UINT32, int(x))
    f32 = lambda k, x: pack_kv('%s.%s' % (a, k), FLOAT32, float(x))
    m = [pack_kv('general.architecture', STRING, a), pack_kv('general.name', STRING, 'tiny random model'),
         u32('context_length', s['ctx']), u32('embedding_length', s['dim']), u32('block_count', s['layers']),
         u32('feed_forward_length', s['ff']), u32('attention.head_count', s['heads']),
         u32('attention.head_count_kv', s['kv']), f32('attention.layer_norm_rms_epsilon', s.get('eps', 1e-5)),
         pack_kv('general.file_type', UINT32, 0)]
    if 'base' in s:
        m.append(f32('rope.freq_base', s['base']))
    if f['rope_dims_key']:
        m.append(u32('rope.dimension_count', s.get('rot', s['head'])))
    if s.get('key_length'):
        m += [u32('attention.key_length', s['head']), u32('attention.value_length', s['head'])]
    if family_rows.has_windows(f):
        m.append(u32('attention.sliding_window', s['swa']))
    if f['longrope'] and s.get('longrope'):   # Phi3MiniModel: LongRoPE's magnitude factor
        scale = s['ctx'] / s['orig_ctx']
        m += [u32('rope.scaling.original_context_length', s['orig_ctx']),
              f32('rope.scaling.attn_factor', np.sqrt(1 + np.log(scale) / np.log(s['orig_ctx'])))]
    if f['attn_softcap']:
        m.append(f32('attn_logit_softcapping', f['attn_softcap']))
    if f['final_softcap']:
        m.append(f32('final_logit_softcapping', f['final_softcap']))
    if s.get('experts'):   # TextModel.set_gguf_parameters: num_local_experts, num_experts_per_tok
        m += [u32('expert_count', s['experts']), u32('expert_used_count', s['used'])]
        if f['expert_ff_key']:   # Qwen2MoeModel: moe_intermediate_size
            m.append(u32('expert_feed_forward_length', s['ff_exp']))
        if f['shared_expert']:   # Qwen2MoeModel: shared_expert_intermediate_size
            m.append(u32('expert_shared_feed_forward_length', s['ff_shexp']))
    if 'yarn' in s:   # TextModel.set_gguf_parameters: rope_scaling of type yarn (gpt-oss's)
        m += [pack_kv('%s.rope.scaling.type' % a, STRING, 'yarn'), f32('rope.scaling.factor', s['yarn']),
              u32('rope.scaling.original_context_length', s['orig_ctx']),
              f32('rope.scaling.yarn_beta_fast', 32.0), f32('rope.scaling.yarn_beta_slow', 1.0)]
    if 'linear_scale' in s:
        m += [pack_kv('%s.rope.scaling.type' % a, STRING, 'linear'), f32('rope.scaling.factor', s['linear_scale'])]
    return m


def layer_tensors(W, il, s):
    f, p = FAMILIES[s['arch']], 'blk.%d.' % il
    dim, q_dim, kv_dim, ff = s['dim'], s['heads'] * s['head'], s['kv'] * s['head'], s['ff']
    W.norm(p + 'attn_norm.weight', dim)
    if f['fused']:   # fused q, k, v rows
        qkv = [W.rng.standard_normal((r, dim)) * (GAIN[g] / np.sqrt(dim))
               for r, g in ((q_dim, 'q'), (kv_dim, 'k'), (kv_dim, 'v'))]
        W.tensors.append((p + 'attn_qkv.weight', np.concatenate(qkv).astype(np.float32), 'F32'))
    else:
        W.mat(p + 'attn_q.weight', q_dim, dim, GAIN['q'])
        W.mat(p + 'attn_k.weight', kv_dim, dim, GAIN['k'])
        W.mat(p + 'attn_v.weight', kv_dim, dim, GAIN['v'])
    if f['attn_bias']:
        for t, n in (('q', q_dim), ('k', kv_dim), ('v', kv_dim)):
            W.vec(p + 'attn_%s.bias' % t, 0.5 * W.rng.standard_normal(n))
    W.mat(p + 'attn_output.weight', dim, q_dim, GAIN['o'])
    if f['qk_norm']:
        W.norm(p + 'attn_q_norm.weight', s['head'], s.get('qk_norm_gain', 1.0))
        W.norm(p + 'attn_k_norm.weight', s['head'], s.get('qk_norm_gain', 1.0))
    if f['post_norms']:
        W.norm(p + 'post_attention_norm.weight', dim)
    W.norm(p + 'ffn_norm.weight', dim)
    if f['fused']:   # fused gate rows, then up rows
        W.mat(p + 'ffn_up.weight', 2 * ff, dim, GAIN['up'])
    else:
        W.mat(p + 'ffn_gate.weight', ff, dim, GAIN['gate'])
        W.mat(p + 'ffn_up.weight', ff, dim, GAIN['up'])
    W.mat(p + 'ffn_down.weight', dim, ff, GAIN['down'])
    if f['post_norms']:
        W.norm(p + 'post_ffw_norm.weight', dim)


def neox_rows(w, n_head):
    """Rows of a q or k matrix in llama's GGUF order (each head's pairs (2i, 2i+1)
    interleaved, as LlamaModel.permute leaves them) reordered into NEOX's halves (i,
    i + head/2): the inverse of the converter's permute, so that a NEOX family's RoPE
    rotates the pairs the trained model rotated."""
    rows, cols = w.shape
    return w.reshape(n_head, rows // n_head // 2, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


def experts_from_trained(W, s, f, p, gate, up, down, add, bias):
    """Layer p's router and experts, each of ff_exp of the trained feed-forward's units (gate,
    up, down) with noise, its down scaled by their share."""
    rng, n_exp, ff_exp = W.rng, s['experts'], s['ff_exp']
    n_ff = gate.shape[0]
    W.mat(p + 'ffn_gate_inp.weight', n_exp, s['dim'], ROUTER_GAIN)
    if f['expert_biases']:
        add(p + 'ffn_gate_inp.bias', OSS_ROUTER_BIAS * rng.standard_normal(n_exp))
    exps = {'gate': [], 'up': [], 'down': []}
    for _ in range(n_exp):
        units = np.sort(rng.choice(n_ff, ff_exp, replace=False))
        noise = lambda w: w * (1.0 + EXPERT_NOISE * rng.standard_normal(w.shape))
        exps['gate'].append(noise(gate[units]))
        exps['up'].append(noise(up[units]))
        exps['down'].append(noise(down[:, units]) * (n_ff / ff_exp))
    exps = {which: np.stack(ws) for which, ws in exps.items()}
    if f['expert_biases']:   # gpt-oss: the loud experts, then the biases (see OSS_LOUD)
        for e in rng.choice(n_exp, OSS_LOUD, replace=False):
            exps['gate'][e] *= OSS_LOUD_GAIN
            exps['up'][e] *= OSS_LOUD_GAIN
            exps['down'][e] /= OSS_LOUD_GAIN ** 2
    for which in ('gate', 'up', 'down'):   # numpy (n_expert, rows, cols): GGUF [cols, rows, n_expert]
        add(p + 'ffn_%s_exps.weight' % which, exps[which])
        if f['expert_biases'] and which == 'up':
            add(p + 'ffn_up_exps.bias', -1.0 + 0.1 * rng.standard_normal((n_exp, ff_exp)))
        elif f['expert_biases']:
            bias(p + 'ffn_%s_exps.bias' % which, exps[which], BIAS_GAIN[which])


def shared_expert_from_trained(W, s, p, gate, up, down, add):
    """Layer p's shared expert (qwen2moe, qwen35moe): ff_shexp of the trained feed-forward's
    units, its down halved (the routed experts carry the other half) and scaled by their
    share, its output gated by the sigmoid of a random direction's product with the input."""
    rng, n_ff = W.rng, gate.shape[0]
    units = np.sort(rng.choice(n_ff, s['ff_shexp'], replace=False))
    add(p + 'ffn_gate_shexp.weight', gate[units])
    add(p + 'ffn_up_shexp.weight', up[units])
    add(p + 'ffn_down_shexp.weight', 0.5 * down[:, units] * (n_ff / s['ff_shexp']))
    add(p + 'ffn_gate_inp_shexp.weight', SHEXP_GATE_GAIN / np.sqrt(s['dim']) * rng.standard_normal(s['dim']))


def moe_from_trained(W, s, T):
    """The tensors of a mixture-of-experts fixture made of the trained model T (a GGUFFile)."""
    f, rng = FAMILIES[s['arch']], W.rng
    t = lambda name: T.tensor(name).astype(np.float64)
    add = lambda name, w: W.tensors.append((name, np.asarray(w, np.float32), 'F32'))
    neox = f['rope_layout'] != 'MODEL_ROPE_PAIRS'
    n_exp, ff_exp = s['experts'], s['ff_exp']
    add('token_embd.weight', t('token_embd.weight'))
    add('output_norm.weight', t('output_norm.weight'))
    add('output.weight', t('output.weight'))
    # a bias of a matrix's outputs: gain x the RMS of its rows' lengths (the size of an
    # output for an input of unit RMS) x N(0, 1) each
    bias = lambda name, w, gain: add(name, gain * np.sqrt((w * w).sum(axis=-1).mean()) * rng.standard_normal(w.shape[:-1]))
    for il in range(s['layers']):
        p = 'blk.%d.' % il
        add(p + 'attn_norm.weight', t(p + 'attn_norm.weight'))
        q, k, v = t(p + 'attn_q.weight'), t(p + 'attn_k.weight'), t(p + 'attn_v.weight')
        kv = k.shape[0] // s['head']
        if s['kv'] != kv:   # each KV head repeated for the query heads that read it
            k = np.repeat(k.reshape(kv, s['head'], -1), s['kv'] // kv, axis=0).reshape(-1, s['dim'])
            v = np.repeat(v.reshape(kv, s['head'], -1), s['kv'] // kv, axis=0).reshape(-1, s['dim'])
        q, k = (neox_rows(q, s['heads']), neox_rows(k, s['kv'])) if neox else (q, k)
        for which, w in (('q', q), ('k', k), ('v', v)):
            add(p + 'attn_%s.weight' % which, w)
            if f['attn_bias']:
                bias(p + 'attn_%s.bias' % which, w, BIAS_GAIN[which])
        add(p + 'attn_output.weight', t(p + 'attn_output.weight'))
        if f['attn_out_bias']:
            bias(p + 'attn_output.bias', t(p + 'attn_output.weight'), BIAS_GAIN['o'])
        if f['attn_sinks']:   # the same sinks in every layer, each layer's own order of heads
            add(p + 'attn_sinks.weight', rng.permutation(OSS_SINKS))
        if f['qk_norm']:
            nq = s['heads'] * s['head'] if f['qk_norm_whole'] else s['head']
            nk = s['kv'] * s['head'] if f['qk_norm_whole'] else s['head']
            W.norm(p + 'attn_q_norm.weight', nq, Q_NORM_GAIN[il])
            W.norm(p + 'attn_k_norm.weight', nk, K_NORM_GAIN[il])
        add(p + '%s.weight' % (f['ffn_norm_name'] or 'ffn_norm'), t(p + 'ffn_norm.weight'))
        gate, up, down = t(p + 'ffn_gate.weight'), t(p + 'ffn_up.weight'), t(p + 'ffn_down.weight')
        experts_from_trained(W, s, f, p, gate, up, down, add, bias)
        if f['shared_expert']:
            shared_expert_from_trained(W, s, p, gate, up, down, add)


def hybrid_from_trained(W, s, T):
    """The tensors of the hybrid fixture made of the trained model T (see SHAPES' qwen35)."""
    rng, dim, hd = W.rng, s['dim'], s['head']
    t = lambda name: T.tensor(name).astype(np.float64)
    add = lambda name, w: W.tensors.append((name, np.asarray(w, np.float32), 'F32'))
    add('token_embd.weight', t('token_embd.weight'))
    add('output_norm.weight', t('output_norm.weight'))
    add('output.weight', t('output.weight'))
    heads = lambda w: w.reshape(-1, hd, w.shape[-1])
    for il in range(s['layers']):
        p = 'blk.%d.' % il
        add(p + 'attn_norm.weight', t(p + 'attn_norm.weight'))
        q, k, v, o = (t(p + 'attn_%s.weight' % w) for w in ('q', 'k', 'v', 'output'))
        if (il + 1) % s['attn_every'] == 0:   # gated attention: each head's q rows, then its gate's
            qh = heads(neox_rows(q, s['heads']))
            gate = rng.standard_normal(qh.shape) * (GAIN['q'] / np.sqrt(dim))
            add(p + 'attn_q.weight', np.concatenate([qh, gate], axis=1).reshape(-1, dim))
            add(p + 'attn_k.weight', neox_rows(k, s['kv']))
            add(p + 'attn_v.weight', v)
            add(p + 'attn_output.weight', o)
            W.norm(p + 'attn_q_norm.weight', hd, Q_NORM_GAIN[il])
            W.norm(p + 'attn_k_norm.weight', hd, K_NORM_GAIN[il])
        else:
            nk, nv, per = s['dn_k'], s['dn_v'], s['heads'] // s['kv']
            dq = heads(q)[::per][:nk].reshape(-1, dim)   # the query heads reading KV heads 0..nk-1
            vh = heads(v)[:nk]
            vv = np.concatenate([vh, vh * (1 + DN_V_NOISE * rng.standard_normal(vh.shape))])[:nv]
            add(p + 'attn_qkv.weight', np.concatenate([dq, k[:nk * hd], vv.reshape(-1, dim)]))
            W.mat(p + 'attn_gate.weight', nv * hd, dim, DN_Z_GAIN)
            conv_dim = 2 * nk * hd + nv * hd
            conv = DN_CONV_GAIN * rng.standard_normal((conv_dim, s['dn_conv']))
            conv[:, -1] = 1.0 + 0.1 * rng.standard_normal(conv_dim)
            add(p + 'ssm_conv1d.weight', conv)
            add(p + 'ssm_dt.bias', 0.5 * rng.standard_normal(nv))
            add(p + 'ssm_a', -rng.uniform(DN_A[0], DN_A[1], nv))
            W.mat(p + 'ssm_beta.weight', nv, dim, 1.0)
            W.mat(p + 'ssm_alpha.weight', nv, dim, 1.0)
            W.norm(p + 'ssm_norm.weight', hd)
            cols = [(j % nk) * per + j // nk for j in range(nv)]   # the query head value head j stands for
            add(p + 'ssm_out.weight', np.concatenate([o[:, c * hd:(c + 1) * hd] for c in cols], axis=1))
        add(p + 'post_attention_norm.weight', t(p + 'ffn_norm.weight'))
        gate, up, down = (t(p + 'ffn_%s.weight' % w) for w in ('gate', 'up', 'down'))
        if not s.get('experts'):
            for w, m in (('gate', gate), ('up', up), ('down', down)):
                add(p + 'ffn_%s.weight' % w, m)
            continue
        # qwen35moe: experts as the MoE fixtures' and a shared expert
        experts_from_trained(W, s, FAMILIES[s['arch']], p, gate, up, down, add, None)
        shared_expert_from_trained(W, s, p, gate, up, down, add)


def gemma4_head_rows(w, n_head, hd, full, rng, dim):
    """Rows of a q or k matrix (llama's order, heads of hd) as NEOX heads of `full` values:
    each trained head's pairs (i, i + hd/2) become pairs (i, i + full/2), the other rows
    small noise."""
    h = neox_rows(w, n_head).reshape(n_head, hd, -1)
    out = rng.standard_normal((n_head, full, dim)) * (G4_EXTRA / np.sqrt(dim))
    half, fh = hd // 2, full // 2
    out[:, :half], out[:, fh:fh + half] = h[:, :half], h[:, half:]
    return out.reshape(n_head * full, dim)


def gemma4_from_trained(W, s, T):
    """The tensors of the Gemma 4 fixture made of the trained model T (see SHAPES' gemma4)."""
    rng, dim, hd, hf = W.rng, s['dim'], s['head'], s['head_full']
    t = lambda name: T.tensor(name).astype(np.float64)
    add = lambda name, w: W.tensors.append((name, np.asarray(w, np.float32), 'F32'))
    n, ple, own = s['layers'], s['ple'], s['layers'] - s['shared']
    add('token_embd.weight', t('token_embd.weight') / np.sqrt(dim))
    add('output_norm.weight', t('output_norm.weight'))
    add('output.weight', t('output.weight'))
    pairs = hf // 2
    add('rope_freqs.weight', [1.0] * s['rot_pairs'] + [1e30] * (pairs - s['rot_pairs']))
    if ple:   # per-layer inputs (none in gemma4moe, as in the 26B-A4B)
        W.vec('per_layer_token_embd.weight', rng.standard_normal((T.tensor('token_embd.weight').shape[0], n * ple)))
        W.mat('per_layer_model_proj.weight', n * ple, dim, 1.0)
        W.norm('per_layer_proj_norm.weight', ple)
    scales = iter(G4_OUT_SCALE)
    for il in range(n):
        p, slides = 'blk.%d.' % il, s['slides'][il]
        add(p + 'attn_norm.weight', t(p + 'attn_norm.weight'))
        q, k, v, o = (t(p + 'attn_%s.weight' % w) for w in ('q', 'k', 'v', 'output'))
        if slides:
            add(p + 'attn_q.weight', neox_rows(q, s['heads']))
            if il < own:
                add(p + 'attn_k.weight', neox_rows(k, s['kv']))
                add(p + 'attn_v.weight', v)
            add(p + 'attn_output.weight', o)
            head = hd
        else:
            add(p + 'attn_q.weight', gemma4_head_rows(q, s['heads'], hd, hf, rng, dim))
            if il < own:
                per = s['kv'] // s['kv_full']
                kk = k.reshape(s['kv'], hd, dim)[::per].reshape(-1, dim)
                add(p + 'attn_k.weight', gemma4_head_rows(kk, s['kv_full'], hd, hf, rng, dim))
                if il not in s['no_v']:
                    vv = v.reshape(s['kv'], hd, dim)[::per]
                    vf = rng.standard_normal((s['kv_full'], hf, dim)) * (G4_EXTRA / np.sqrt(dim))
                    vf[:, :hd] = vv
                    add(p + 'attn_v.weight', vf.reshape(-1, dim))
            of = rng.standard_normal((dim, s['heads'], hf)) * (G4_EXTRA / np.sqrt(hf))
            of[:, :, :hd // 2] = o.reshape(dim, s['heads'], hd)[:, :, :hd // 2]
            of[:, :, hf // 2:hf // 2 + hd // 2] = o.reshape(dim, s['heads'], hd)[:, :, hd // 2:]
            add(p + 'attn_output.weight', of.reshape(dim, -1))
            head = hf
        W.norm(p + 'attn_q_norm.weight', head, Q_NORM_GAIN[il])
        if il < own:
            W.norm(p + 'attn_k_norm.weight', head, K_NORM_GAIN[il])
        W.norm(p + 'post_attention_norm.weight', dim, G4_POST_ATTN[il])
        add(p + 'ffn_norm.weight', t(p + 'ffn_norm.weight'))
        gate, up, down = t(p + 'ffn_gate.weight'), t(p + 'ffn_up.weight'), t(p + 'ffn_down.weight')
        if gemma4_ff(s, il) == 2 * gate.shape[0]:   # twice as wide: the units twice, perturbed
            noise = lambda w: w * (1.0 + 0.1 * rng.standard_normal(w.shape))
            gate, up = np.concatenate([gate, noise(gate)]), np.concatenate([up, noise(up)])
            down = 0.5 * np.concatenate([down, noise(down)], axis=1)
        add(p + 'ffn_gate.weight', gate / G4_GELU)   # gelu(x / 1.702) 1.702 is about silu(x)
        add(p + 'ffn_up.weight', up)
        add(p + 'ffn_down.weight', down * G4_GELU)
        W.norm(p + 'post_ffw_norm.weight', dim, G4_POST_FFN[il])
        if s.get('experts'):
            gemma4_experts(W, s, p, gate, up, down, add)
        if ple:
            W.mat(p + 'inp_gate.weight', ple, dim, 1.0)
            W.mat(p + 'proj.weight', dim, ple, 1.0)
            W.norm(p + 'post_norm.weight', dim, G4_PLE_NORM)
        if il in s['out_scaled']:
            add(p + 'layer_output_scale.weight', [next(scales)])


def gemma4_ff(s, il):
    """Layer il's dense feed-forward width: ff is one per layer, or one for all."""
    return s['ff'] if isinstance(s['ff'], int) else s['ff'][il]


def gemma4_experts(W, s, p, gate, up, down, add):
    """Layer p's MoE half beside its dense feed-forward (gemma4moe; see G4_MOE_POST_1): the
    router and its input scale, the norms, and the experts made from the trained units
    (gate, up, down: the trained layer's, not yet scaled for GELU) as experts_from_trained
    makes them, gate and up fused into one stack."""
    rng, dim, n_exp, ff_exp = W.rng, s['dim'], s['experts'], s['ff_exp']
    n_ff = gate.shape[0]
    W.norm(p + 'post_ffw_norm_1.weight', dim, G4_MOE_POST_1)
    W.mat(p + 'ffn_gate_inp.weight', n_exp, dim, ROUTER_GAIN)
    W.norm(p + 'ffn_gate_inp.scale', dim, np.sqrt(dim))
    W.norm(p + 'pre_ffw_norm_2.weight', dim)
    gate_up, downs = [], []
    for _ in range(n_exp):
        units = np.sort(rng.choice(n_ff, ff_exp, replace=False))
        noise = lambda w: w * (1.0 + EXPERT_NOISE * rng.standard_normal(w.shape))
        g, u = noise(gate[units]) / G4_GELU, noise(up[units])
        gate_up.append(np.concatenate([g, u]))   # the expert's ff_exp gate rows, then its up rows
        downs.append(noise(down[:, units]) * (n_ff / ff_exp) * G4_GELU)
    # numpy (n_expert, rows, cols): GGUF [cols, rows, n_expert]
    add(p + 'ffn_gate_up_exps.weight', np.stack(gate_up))
    add(p + 'ffn_down_exps.weight', np.stack(downs))
    add(p + 'ffn_down_exps.scale', rng.uniform(G4_MOE_DOWN_SCALE[0], G4_MOE_DOWN_SCALE[1], n_exp))
    W.norm(p + 'post_ffw_norm_2.weight', dim, G4_MOE_POST_2)


def gemma4_metadata(s):
    """Gemma 4's keys (Gemma4Model.set_gguf_parameters over Gemma3Model's)."""
    a = s['arch']
    u32 = lambda k, x: pack_kv('%s.%s' % (a, k), UINT32, int(x))
    f32 = lambda k, x: pack_kv('%s.%s' % (a, k), FLOAT32, float(x))
    arr = lambda k, xs, t: pack_kv('%s.%s' % (a, k), ARRAY, list(xs), t)
    kv = [s['kv'] if sl else s['kv_full'] for sl in s['slides']]
    return [pack_kv('general.architecture', STRING, a), pack_kv('general.name', STRING, 'tiny model'),
            pack_kv('general.file_type', UINT32, 0),
            u32('context_length', s['ctx']), u32('embedding_length', s['dim']), u32('block_count', s['layers']),
            arr('feed_forward_length', s['ff'], UINT32) if not isinstance(s['ff'], int)
            else u32('feed_forward_length', s['ff']), u32('attention.head_count', s['heads']),
            arr('attention.head_count_kv', kv, UINT32), f32('attention.layer_norm_rms_epsilon', s['eps']),
            u32('attention.key_length', s['head_full']), u32('attention.value_length', s['head_full']),
            u32('attention.key_length_swa', s['head']), u32('attention.value_length_swa', s['head']),
            f32('rope.freq_base', s['base']), f32('rope.freq_base_swa', s['base_swa']),
            u32('rope.dimension_count', s['head_full']), u32('rope.dimension_count_swa', s['head']),
            u32('attention.sliding_window', s['swa']),
            arr('attention.sliding_window_pattern', [bool(x) for x in s['slides']], BOOL),
            u32('attention.shared_kv_layers', s['shared']), u32('embedding_length_per_layer_input', s['ple']),
            f32('final_logit_softcapping', s['softcap'])] + (
            [u32('expert_count', s['experts']), u32('expert_used_count', s['used']),
             u32('expert_feed_forward_length', s['ff_exp'])] if s.get('experts') else [])


def hybrid_metadata(s):
    """The keys a hybrid family's converter writes beside the others (Qwen3NextModel,
    _Qwen35MRopeMixin)."""
    a = s['arch']
    u32 = lambda k, x: pack_kv('%s.%s' % (a, k), UINT32, int(x))
    return [u32('ssm.conv_kernel', s['dn_conv']), u32('ssm.state_size', s['head']),
            u32('ssm.group_count', s['dn_k']), u32('ssm.time_step_rank', s['dn_v']),
            u32('ssm.inner_size', s['dn_v'] * s['head']), u32('full_attention_interval', s['attn_every']),
            pack_kv('%s.rope.dimension_sections' % a, ARRAY, list(s['sections']), INT32)]


def make(name, out, seed=1, vocab=None):
    s = SHAPES[name]
    if s.get('trained'):
        T = gguf.GGUFFile(TRAINED)
        records, n_vocab = vocab_records(s, vocab or TRAINED)
        if FAMILIES[s['arch']]['layer_shapes']:
            W = Weights(seed)
            gemma4_from_trained(W, s, T)
            gguf.write_gguf(out, gemma4_metadata(s) + records, W.tensors)
            return
        meta = metadata(name, s)
        if FAMILIES[s['arch']]['vocab_size_key']:
            meta.append(pack_kv('%s.vocab_size' % s['arch'], UINT32, n_vocab))
        W = Weights(seed)
        if FAMILIES[s['arch']]['delta_net']:
            meta += hybrid_metadata(s)
            hybrid_from_trained(W, s, T)
        elif family_rows.experts(FAMILIES[s['arch']]) == 'none':
            raise SystemExit('%s: family %s has no experts in model_family.c' % (name, s['arch']))
        else:
            moe_from_trained(W, s, T)
        gguf.write_gguf(out, meta + records, W.tensors)
        return
    records, n_vocab = vocab_records(s, vocab or (BPE_VOCAB if s['vocab'] == 'bpe' else SPM_VOCAB))
    meta = metadata(name, s)
    if FAMILIES[s['arch']]['vocab_size_key']:
        meta.append(pack_kv('%s.vocab_size' % s['arch'], UINT32, n_vocab))
    W = Weights(seed)
    embd = W.rng.standard_normal((n_vocab, s['dim'])) * s.get('embd_std', 1.0)
    W.tensors.append(('token_embd.weight', embd.astype(np.float32), 'F32'))
    W.norm('output_norm.weight', s['dim'], s.get('out_norm_gain', 1.0))
    if not s['tied']:
        W.mat('output.weight', n_vocab, s['dim'], GAIN['output'])
    if FAMILIES[s['arch']]['longrope'] and s.get('longrope'):
        half = s['head'] // 2
        W.vec('rope_factors_long.weight', np.geomspace(1.0, 64.0, half) * (1 + 0.1 * W.rng.random_sample(half)))
        W.vec('rope_factors_short.weight', 1.0 + W.rng.random_sample(half))
    for il in range(s['layers']):
        layer_tensors(W, il, s)
    gguf.write_gguf(out, meta + records, W.tensors)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('arch', nargs='?', choices=sorted(SHAPES))
    ap.add_argument('out', nargs='?')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--vocab', help='the GGUF file whose tokenizer.* keys to copy')
    ap.add_argument('--list', action='store_true', help='print each family\'s shape')
    a = ap.parse_args(argv)
    if a.list:
        for k, s in SHAPES.items():
            print('%-13s %s' % (k, ' '.join('%s=%s' % kv for kv in s.items())))
        return 0
    if not a.arch or not a.out:
        ap.error('ARCH and OUT are needed')
    make(a.arch, a.out, a.seed, a.vocab)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
