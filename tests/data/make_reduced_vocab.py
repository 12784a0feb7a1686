#!/usr/bin/env python3
"""make_reduced_vocab.py — a BPE vocabulary (GGUF, vocabulary only) cut down to what a
set of texts can reach, for a test that must carry the vocabulary in little room:

    make_reduced_vocab.py FULL.gguf TEXTS.jsonl[.gz] CASES.inp OUT.gguf

TEXTS are the "text" fields of a golden file, CASES llama.cpp's own tokenizer test
texts (separated by "\\n__ggml_vocab_test__\\n"). Made for Gemma 4's vocabulary
(tokenizer.ggml.model "gemma4": BPE over UTF-8 text with "▁" for a space, no word
splitting but at newlines), whose 514,906 merges and 262,144 tokens are 15.7 MB.

A merge can only fire inside a word of the text if the two halves joined occur in that
word, and a normal piece can only be looked up if it occurs in it; so, with every text
written as the tokenizer sees it (spaces as "▁") and joined, the file keeps
- every merge whose joined halves occur in the joined texts, in their order (ranks are
  only compared, so the relative order is all that counts);
- every token at its id; a normal token that occurs nowhere in the texts gets a
  placeholder piece ("␂" and its id, which no text holds), so that ids do not move;
- every other record as it is.
For these texts the reduced file tokenizes as the full one; make_bpe_goldens.mjs checks
that with llama.cpp's llama-tokenize on both (KIND gemma4). Deterministic. Python 3,
numpy (tests/ref/gguf.py).

A byte-level vocabulary (tokenizer.ggml.model "gpt2": StarCoder's, Refact's, MPT's) is
cut the same way with the texts written as its pieces are, each UTF-8 byte as GPT-2's
byte-to-character map has it; its one-character pieces (the bytes) all stay."""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'ref'))
from gguf import GGUFFile, pack_kv, copy_kv, write_gguf, ARRAY, STRING, INT32  # noqa: E402

NORMAL = 1
PLACEHOLDER = '\u2402'


def byte_to_char():
    """GPT-2's map of the 256 bytes to the characters its pieces spell them with: the
    printable Latin-1 bytes as themselves, the others as U+0100 and on, in order."""
    shown = [b for b in range(256) if 0x21 <= b <= 0x7e or 0xa1 <= b <= 0xac or 0xae <= b]
    out, extra = {}, 0
    for b in range(256):
        if b in shown:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    full, texts_path, cases_path, out = sys.argv[1:]
    opener = gzip.open if texts_path.endswith('.gz') else open
    with opener(texts_path, 'rt', encoding='utf-8') as f:
        texts = [json.loads(line)['text'] for line in f if line.strip()]
    with open(cases_path, 'rb') as f:
        texts += [t.decode('utf-8', 'replace') for t in f.read().split(b'\n__ggml_vocab_test__\n')]
    v = GGUFFile(full)
    byte_level = v.meta['tokenizer.ggml.model'] == 'gpt2'
    if byte_level:
        as_pieces = byte_to_char()
        joined = '\0'.join(''.join(as_pieces[b] for b in t.encode('utf-8', 'surrogatepass'))
                            for t in texts)
    else:
        joined = '\0'.join(t.replace(' ', '\u2581') for t in texts)
    if PLACEHOLDER in joined:
        sys.exit('a text holds the placeholder character')

    tokens = list(v.meta['tokenizer.ggml.tokens'])
    types = v.meta['tokenizer.ggml.token_type']
    merges = list(v.meta['tokenizer.ggml.merges'])
    kept_tokens = 0
    for i, t in enumerate(tokens):
        if int(types[i]) == NORMAL and t not in joined and not (byte_level and len(t) == 1):
            tokens[i] = PLACEHOLDER + str(i)
        else:
            kept_tokens += 1
    kept_merges = []
    for m in merges:
        cut = m.find(' ', 1)
        if cut > 0 and m[:cut] + m[cut + 1:] in joined:
            kept_merges.append(m)
    records = []
    for k in v.meta:
        if k == 'tokenizer.ggml.tokens':
            records.append(pack_kv(k, ARRAY, tokens, STRING))
        elif k == 'tokenizer.ggml.merges':
            records.append(pack_kv(k, ARRAY, kept_merges, STRING))
        else:
            records.append(copy_kv(v, k))
    write_gguf(out, records, [])
    print('%d texts: kept %d of %d tokens (the others are placeholders), %d of %d merges'
          % (len(texts), kept_tokens, len(tokens), len(kept_merges), len(merges)), file=sys.stderr)


if __name__ == '__main__':
    main()
