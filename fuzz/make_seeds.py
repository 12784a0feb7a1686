#!/usr/bin/env python3
"""make_seeds.py — writes the crafted seed inputs of the fuzz targets into
fuzz/corpus/<target>/seed-*: tiny but valid models of every llama2.c version (and
broken ones beside them), small tokenizers with the edge cases of the format, texts,
template inputs and saved chats. The files are committed; rerun this script only to
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
