#!/usr/bin/env python3
"""make_seeds.py — writes the crafted seed inputs of the fuzz targets into
fuzz/corpus/<target>/seed-*: tiny but valid models of every llama2.c version and of
GGUF (and broken ones beside them), small tokenizers with the edge cases of the
format, texts, template inputs, saved chats, config files and traces. The files are committed; rerun this script only to
change them (python3 fuzz/make_seeds.py from the top of the tree). Inputs that once
crashed a target live beside the seeds as crash-* files and are not touched here."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ---- models ----
def floats(n, scale=0.1):
    return struct.pack("<%df" % n, *[((i * 37) % 17 - 8) * scale / 8 for i in range(n)])


def ones(n):
    return struct.pack("<%df" % n, *([1.0] * n))


def model(version, dim=8, hidden=16, layers=1, heads=2, kv_heads=1, vocab=8, seq=4,
          shared=1, group=8):
    hs = dim // heads
    kv = kv_heads * hs
    shape = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab, seq)
    mats = [("wq", dim * dim), ("wk", kv * dim), ("wv", kv * dim), ("wo", dim * dim),
            ("w1", hidden * dim), ("w2", dim * hidden), ("w3", hidden * dim)]
    if version == 0:
        hdr = struct.pack("<7i", dim, hidden, layers, heads, kv_heads,
                          vocab if shared else -vocab, seq)
        body = floats(vocab * dim) + ones(layers * dim)
        for name, n in mats[:4]:
            body += floats(layers * n)
        body += ones(layers * dim)
        for name, n in mats[4:]:
            body += floats(layers * n)
        body += ones(dim) + floats(2 * seq * (hs // 2))
        if not shared:
            body += floats(vocab * dim)
        return hdr + body
    hdr = struct.pack("<Ii", 0x616B3432, version) + shape + bytes([shared])
    if version == 2:
        hdr += struct.pack("<i", group)
    hdr += bytes(256 - len(hdr))
    norms = ones(layers * dim) + ones(layers * dim) + ones(dim)
    tensors = [vocab * dim] + [n for _, n in mats for _ in range(layers)] + \
        ([] if shared else [vocab * dim])
    if version == 1:
        return hdr + norms + b"".join(floats(n) for n in tensors)
    # v2: each tensor (each layer's own) is its int8 values, then one scale per group
    body = b""
    for n in tensors:
        body += bytes([(i * 7) % 256 for i in range(n)])
        body += struct.pack("<%df" % (n // group), *([0.01] * (n // group)))
    return hdr + norms + body


put("model", "v0-tiny", model(0))
put("model", "v0-unshared", model(0, shared=0))
put("model", "v1-tiny", model(1))
put("model", "v1-gqa", model(1, dim=16, heads=4, kv_heads=2, hidden=8))
put("model", "v2-tiny", model(2))
put("model", "v2-group32", model(2, dim=32, hidden=32, vocab=4, group=32))
put("model", "v2-unshared", model(2, shared=0, layers=2))
put("model", "v1-truncated", model(1)[:-5])
put("model", "v1-trailing", model(1) + b"\0\0\0\0")
nan = bytearray(model(1))
nan[256:260] = struct.pack("<f", float("nan"))
put("model", "v1-nan-norm", bytes(nan))
put("model", "ak42-v3", struct.pack("<Ii", 0x616B3432, 3) + bytes(248))
put("model", "ak42-short", struct.pack("<Ii", 0x616B3432, 1) + bytes(20))
put("model", "gguf-v3", b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
put("model", "gguf-v1", b"GGUF" + struct.pack("<I", 1))
put("model", "v0-negative", struct.pack("<7i", -8, 16, 1, 2, 1, 8, 4))
put("model", "v0-huge", struct.pack("<7i", 65536, 1 << 20, 1024, 64, 64, 1 << 20, 1 << 20))
put("model", "tiny-3", b"ak4")

# ---- tokenizers ----
def tokenizer(pieces, max_len=None, lens=None):
    if max_len is None:
        max_len = max(len(p) for p, _ in pieces)
    out = struct.pack("<i", max_len)
    for i, (p, s) in enumerate(pieces):
        n = len(p) if lens is None else lens[i]
        out += struct.pack("<fi", s, n) + p
    return out


base = [(b"<unk>", 0.0), (b"\n<s>\n", 0.0), (b"\n</s>\n", 0.0)]
bytes_ = [(b"<0x%02X>" % b, 0.0) for b in range(256)]
words = [(b" ", -1.0), (b"a", -2.0), (b"b", -2.0), (b" a", -3.0), (b"ab", -4.0),
         (b" ab", -5.0), (b"\xc3\xa9", -6.0), (b"<s>", -7.0), (b"", -8.0)]
put("tokenizer", "minimal", tokenizer(base))
put("tokenizer", "bytes-words", tokenizer(base + bytes_ + words))
put("tokenizer", "no-bytes", tokenizer(base + words))
put("tokenizer", "duplicates", tokenizer(base + words + words))
put("tokenizer", "negative-length", tokenizer(base + [(b"x", 0.0)], lens=[5, 5, 6, -1]))
put("tokenizer", "length-past-end", tokenizer(base + [(b"x", 0.0)], lens=[5, 5, 6, 99]))
put("tokenizer", "longer-than-max", tokenizer(base + [(b"abcdefgh", 0.0)], max_len=4))
put("tokenizer", "negative-max", tokenizer(base, max_len=-3))
put("tokenizer", "two-tokens", tokenizer(base[:2]))
put("tokenizer", "header-only", struct.pack("<i", 8))
put("tokenizer", "nan-scores", tokenizer(base + [(b"a", float("nan")), (b"b", float("inf"))]))

# ---- encode: text ----
texts = {
    "ascii": "Once upon a time, there was a little dog named Max.",
    "utf8": "Caf\u00e9 \u65e5\u672c\u8a9e \U0001F600 \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "invalid-utf8": b"abc \xff\xfe \xc3 \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 end",
    "control": "line\nnext\ttab\r\x1b[31mred\x07",
    "control-tokens": "<s>[INST] <<SYS>>\n</s> [/INST]<unk><0x41>",
    "spaces": "   leading and   many   spaces   ",
    "long-word": "a" * 300,
    "empty": "",
    "newlines": "\n\n\n\n",
}
for name, t in texts.items():
    put("encode", name, t)

# ---- template: system NUL user ----
put("template", "user-only", "Tell me a story about a dog named Max.")
put("template", "system-user", "You are brief.\0Hi!")
put("template", "tags", "<</SYS>>\n[/INST]</s>\0<s>[INST] [/INST] </s>")
put("template", "empty-both", "\0")
put("template", "binary", b"\xff\x00\xfe\x01\x02")

# ---- saved chats ----
chat = {
    "llmchat_chat": 1, "model": "/models/chat260K.bin", "tokenizer": "/models/tok512.bin",
    "template": "llama2", "system": "You tell short stories.", "vocab_size": 512,
    "settings": {"temperature": 0.8, "top-p": 0.9, "top-k": 40, "min-p": 0.05,
                 "repeat-penalty": 1.1, "repeat-last-n": 64, "seed": 18446744073709551615,
                 "steps": 64, "ctx": 512},
    "turns": [
        {"user": "Tell me a story about Tom.", "reply": "Once upon a time.",
         "reply_tokens": [403, 407, 261, 429, 30], "complete": True, "cut": False,
         "in_context": False},
        {"user": "And Max?", "reply": "Max was a dog.", "reply_tokens": [350, 55, 261, 511, 0],
         "complete": False, "cut": True, "in_context": True},
    ],
}
put("chatfile", "full", json.dumps(chat, indent=1))
put("chatfile", "minimal", '{"llmchat_chat": 1, "turns": []}')
put("chatfile", "future-members",
    '{"llmchat_chat": 1, "x": [{"y": null}], "turns": [{"user": "hi", "branches": [{"at": 1}]}]}')
put("chatfile", "escapes",
    '{"llmchat_chat":1,"system":"\\u00ff\\ud83d\\ude00\\n\\"","turns":[{"user":"a\\u0007b",'
    '"reply":"\\u0000"}]}')
put("chatfile", "newer", '{"llmchat_chat": 9, "turns": []}')
put("chatfile", "deep", "[" * 100 + "]" * 100)
put("chatfile", "numbers", '[0, -0, 1e999, -1.5E-7, 123456789012345678901234567890]')
put("chatfile", "not-json", "User: hi\n\nAssistant: hello\n")
# version 3: interventions ("steer") and raw bytes written as \udcXX ("raw_bytes")
steered = dict(chat, llmchat_chat=3, raw_bytes="\\udcXX", template="llama3.1",
               system="caf\u00e9 \udce9",
               steer={"vectors": [{"name": "happy", "path": "/v/happy.gguf", "scale": 2,
                                   "fnv1a64": "a65f7298379fa686"}],
                      "layers": [1, 3], "heads_out": [[4, 4], [0, 1]], "heads_reset": [[0, 1]],
                      "experts_out": [[1, 5]], "experts_forced": [[0, 2]]})
put("chatfile", "steer", json.dumps(steered, indent=1))
# version 4: a turn's interventions by segment ("ran_with")
ran = dict(steered, llmchat_chat=4)
ran["turns"] = [dict(t) for t in chat["turns"]]
ran["turns"][0]["ran_with"] = [
    {"from": -12, "steer": {"vectors": [], "layers": None, "heads_out": []}},
    {"from": 3, "steer": {"vectors": [], "layers": None, "heads_out": [[1, 1]]}}]
put("chatfile", "ran-with", json.dumps(ran, indent=1))


# ---- GGUF (version 3): the parser, the tokenizer from metadata, and tiny models ----
GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_U64 = 4, 5, 6, 7, 8, 9, 10


def gstr(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def gvalue(t, v):
    if t == GGUF_U32:
        return struct.pack("<I", v)
    if t == GGUF_I32:
        return struct.pack("<i", v)
    if t == GGUF_F32:
        return struct.pack("<f", v)
    if t == GGUF_BOOL:
        return struct.pack("<B", v)
    if t == GGUF_STRING:
        return gstr(v)
    if t == GGUF_U64:
        return struct.pack("<Q", v)
    et, items = v
    return struct.pack("<IQ", et, len(items)) + b"".join(gvalue(et, x) for x in items)


def gguf(kvs, tensors, version=3, align=32):
    """kvs: [(key, type, value)]; tensors: [(name, dims (ne0 first), ggml type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack("<I", t) + gvalue(t, v)
    offset = 0
    data = b""
    for name, dims, gt, raw in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", gt, offset)
        pad = (-len(raw)) % align
        data += raw + bytes(pad)
        offset += len(raw) + pad
    out += bytes((-len(out)) % align)
    return out + data


def gguf_vocab_kvs(pieces):
    return [
        ("tokenizer.ggml.model", GGUF_STRING, "llama"),
        ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, pieces)),
        ("tokenizer.ggml.scores", GGUF_ARRAY, (GGUF_F32, [-float(i) for i in range(len(pieces))])),
        ("tokenizer.ggml.token_type", GGUF_ARRAY,
         (GGUF_I32, [2 if i == 0 else 3 if i < 3 else 6 if p.startswith("<0x") else 1
                     for i, p in enumerate(pieces)])),
        ("tokenizer.ggml.bos_token_id", GGUF_U32, 1),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, 2),
    ]


vocab8 = ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "\u2581a", "ab"]
vocab_bytes = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["\u2581", "a", "\u2581a"]


def gguf_model(dim=8, hidden=16, layers=1, heads=2, kv_heads=1, vocab=vocab8, seq=4, output=False,
               qtype=0):
    hs = dim // heads
    kv = kv_heads * hs
    kvs = [
        ("general.architecture", GGUF_STRING, "llama"),
        ("general.alignment", GGUF_U32, 32),
        ("llama.embedding_length", GGUF_U32, dim),
        ("llama.feed_forward_length", GGUF_U32, hidden),
        ("llama.block_count", GGUF_U32, layers),
        ("llama.attention.head_count", GGUF_U32, heads),
        ("llama.attention.head_count_kv", GGUF_U32, kv_heads),
        ("llama.context_length", GGUF_U32, seq),
        ("llama.rope.freq_base", GGUF_F32, 10000.0),
        ("llama.attention.layer_norm_rms_epsilon", GGUF_F32, 1e-5),
    ] + gguf_vocab_kvs(vocab)
    nv = len(vocab)

    def mat(name, rows, cols):
        if qtype == 8 and cols % 32 == 0:  # Q8_0: per 32 values an fp16 scale, 32 int8
            blocks = b"".join(struct.pack("<e", 0.01) + bytes([(i * 7) % 256 for i in range(32)])
                              for _ in range(rows * cols // 32))
            return (name, [cols, rows], 8, blocks)
        return (name, [cols, rows], 0, floats(rows * cols))

    tensors = [mat("token_embd.weight", nv, dim), ("output_norm.weight", [dim], 0, ones(dim))]
    if output:
        tensors.append(mat("output.weight", nv, dim))
    for l in range(layers):
        tensors += [("blk.%d.attn_norm.weight" % l, [dim], 0, ones(dim)),
                    ("blk.%d.ffn_norm.weight" % l, [dim], 0, ones(dim)),
                    mat("blk.%d.attn_q.weight" % l, dim, dim), mat("blk.%d.attn_k.weight" % l, kv, dim),
                    mat("blk.%d.attn_v.weight" % l, kv, dim), mat("blk.%d.attn_output.weight" % l, dim, dim),
                    mat("blk.%d.ffn_gate.weight" % l, hidden, dim), mat("blk.%d.ffn_up.weight" % l, hidden, dim),
                    mat("blk.%d.ffn_down.weight" % l, dim, hidden)]
    return gguf(kvs, tensors)


for target in ("model", "gguf"):
    put(target, "gguf-tiny", gguf_model())
    put(target, "gguf-tiny-output", gguf_model(output=True, layers=2))
    put(target, "gguf-q8_0", gguf_model(dim=32, hidden=32, heads=4, kv_heads=2, qtype=8))
    put(target, "gguf-bytes-vocab", gguf_model(vocab=vocab_bytes))
put("gguf", "kv-every-type", gguf([
    ("u32", GGUF_U32, 7), ("i32", GGUF_I32, -7), ("f32", GGUF_F32, 0.5), ("bool", GGUF_BOOL, 1),
    ("string", GGUF_STRING, "caf\u00e9"), ("u64", GGUF_U64, 1 << 40),
    ("array.u32", GGUF_ARRAY, (GGUF_U32, [1, 2, 3])),
    ("array.string", GGUF_ARRAY, (GGUF_STRING, ["a", "", "bc"])),
    ("array.empty", GGUF_ARRAY, (GGUF_F32, [])),
    ("array.nested", GGUF_ARRAY, (GGUF_ARRAY, [(GGUF_U32, [1]), (GGUF_U32, [])])),
], []))
put("gguf", "version2", gguf([("general.architecture", GGUF_STRING, "llama")], [], version=2))
put("gguf", "vocab-only", gguf(gguf_vocab_kvs(vocab_bytes), []))
put("gguf", "tensor-past-end", gguf([], [("t", [4, 4], 0, floats(4))])[:-8])
put("gguf", "huge-counts", b"GGUF" + struct.pack("<IQQ", 3, 1 << 60, 1 << 60))
put("gguf", "odd-alignment", gguf([("general.alignment", GGUF_U32, 3)], [("t", [2], 0, floats(2))]))
put("gguf", "string-too-long", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 62))

# ---- config files ----
configs = {
    "every-key": "model = chat260K\ntokenizer = ~/tok512.bin\nsystem = \"  You are brief.  \"\n"
                 "temperature = 0.7\ntop-p = 0.9\ntop-k = 40\nmin-p = 0.05\nrepeat-penalty = 1.1\n"
                 "repeat-last-n = 64\nsteps = 128\nctx = 256\nthreads = 2\nkernels = auto\n"
                 "theme = light\nmouse = yes\nhistory-size = 10\n",
    "comments-blanks": "# a comment\n\n   \t\n  seed = 42   # trailing comment\n",
    "problems": "no equals sign\n= no key\nkey =\n\"unclosed = 1\nsystem = \"open\n",
    "crlf": "top-k = 3\r\ntemperature = 0\r\n",
    "nul": "top-k = 3\n\0\nseed = 1\n",
    "long-line": "system = " + "x" * 3000 + "\n",
    "no-newline": "seed = 7",
    "utf8": "system = caf\u00e9 \u65e5\u672c\n",
}
for name, text in configs.items():
    put("config", name, text)

# ---- traces (JSON Lines, docs/trace-format.md) ----
# Two real traces (llmchat -m generate --trace-attn, -m chat --trace-lens on the
# bundled model) are seeds too: fuzz/corpus/trace/seed-real-*, made by hand once.
header = {"llmchat_trace": 1, "program": "llmchat", "mode": "chat",
          "model": {"path": "/m/chat260K.bin", "name": "chat260K.bin", "weights": "q8_0", "dim": 8,
                    "hidden_dim": 16, "n_layers": 2, "n_heads": 2, "n_kv_heads": 1, "vocab_size": 4,
                    "seq_len": 8},
          "kv_cache": "q8_0", "kernels": "scalar",
          "options": {"temperature": 1, "top_k": 0, "top_p": 0.9, "min_p": 0, "repeat_penalty": 1,
                      "repeat_last_n": 64, "seed": 7, "steps": 4, "ctx": 8},
          "attn": True, "lens": True, "vocab": ["<unk>", "<s>", "</s>", " a"]}
rec = {"pos": 0, "token": 1, "piece": "<s>", "phase": "prompt", "next": 3, "next_prob": 0.5,
       "next_rank": 1, "top": [[3, 9.5, 0.5], [2, 8.0, 0.25]], "sampler": None, "ms": 0.1,
       "attn": [[[1.0]] * 2] * 2}
gen = dict(rec, pos=1, token=3, piece=" a", phase="gen", next=2,
           sampler={"temperature": 1, "top_k": 0, "top_p": 0.9, "min_p": 0, "repeat_penalty": 1,
                    "repeat_last_n": 64, "n_penalized": 0, "kept_top_k": 4, "kept_top_p": 2,
                    "kept_min_p": 2, "greedy": False, "draw": 0.3, "chosen": 2, "chosen_prob": 0.4,
                    "chosen_rank": 2, "seed": 7},
           attn=[[[0.5, 0.5]] * 2] * 2,
           lens=[{"top": [[3, 0.5], [2, 0.25], [0, 0.1]], "next_rank": 2, "next_prob": 0.25}] * 2)
put("trace", "v1", "\n".join(json.dumps(x) for x in (header, rec, gen)) + "\n")
put("trace", "v0-headerless", json.dumps(rec) + "\n" + json.dumps(gen) + "\n")
put("trace", "attn-too-short", json.dumps(header) + "\n" + json.dumps(dict(gen, attn=[[[1.0]]])) + "\n")
put("trace", "attn-too-long", json.dumps(header) + "\n" + json.dumps(dict(rec, attn=[[[1.0] * 9] * 2] * 2)) + "\n")
put("trace", "lens-short", json.dumps(header) + "\n" + json.dumps(dict(gen, lens=[{"top": []}])) + "\n")
put("trace", "broken-lines", json.dumps(header) + "\n{not json\n" + json.dumps(rec)[:40] + "\n"
    + json.dumps(dict(rec, pos=-5)) + "\n" + json.dumps(dict(rec, top="x")) + "\n"
    + json.dumps(dict(rec, pos=1 << 40)) + "\n" + json.dumps(dict(rec, token=99999)) + "\n")
put("trace", "newer-version", json.dumps(dict(header, llmchat_trace=99)) + "\n")
put("trace", "huge-shape", json.dumps(dict(header, model=dict(header["model"], n_layers=1 << 30,
                                                             n_heads=1 << 30))) + "\n" + json.dumps(gen) + "\n")
put("trace", "rewound", json.dumps(header) + "\n" +
    "\n".join(json.dumps(dict(gen, pos=p, attn=[[[1.0 / (p + 1)] * (p + 1)] * 2] * 2)) for p in (1, 2, 1, 2, 3)) + "\n")
put("trace", "empty", "")

# ---- edits of a real trace (trace_order: byte 0 picks the straight or the rewound run,
# then 3 bytes an edit: 0 swap, 1 copy, 2 delete, 3 damage; then two line numbers) ----
for name, edits in {
    "straight": [0], "rewound": [1],
    "straight-swaps": [0, 0, 3, 20, 0, 0, 30, 0, 5, 6, 0, 17, 2],
    "straight-copies": [0, 1, 4, 9, 1, 36, 0, 1, 2, 2],
    "straight-delete-first": [0, 2, 0, 0], "straight-delete-last": [0, 2, 36, 0],
    "straight-damage-two": [0, 3, 10, 0, 3, 11, 0],
    "straight-shuffle-and-delete": [0, 0, 1, 30, 0, 2, 29, 2, 15, 0, 1, 3, 7],
    "rewound-swap": [1, 0, 5, 40], "rewound-copy-old": [1, 1, 20, 50],
    "rewound-delete": [1, 2, 41, 0],
}.items():
    put("trace_order", name, bytes(edits))
