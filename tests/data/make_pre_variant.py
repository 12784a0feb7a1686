#!/usr/bin/env python3
"""make_pre_variant.py — a copy of a vocabulary-only GGUF with another pre-tokenizer:

    make_pre_variant.py IN.gguf[.gz] PRE OUT.gguf

Every metadata record is copied as it is but tokenizer.ggml.pre, which becomes PRE. Used
to make the vocabulary golden/qwen35_tok.jsonl.gz was made on (Qwen3's, qwen3-vocab.gguf.gz,
under Qwen 3.5's pre-tokenizer "qwen35"): llama.cpp's own Qwen 3.5 test vocabulary
(models/ggml-vocab-qwen35.gguf in llama.cpp 0.4.0) has the same 151,936 tokens and
151,387 merges as Qwen3's, only other added tokens. test_tokenizer_bpe.c writes the same
copy at test time (tests/gguf_copy.h). Python 3 standard library and numpy."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'ref'))
from gguf import GGUFFile, pack_kv, copy_kv, write_gguf, STRING  # noqa: E402


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, pre, out = sys.argv[1:]
    f = GGUFFile(src)
    if f.tensors:
        sys.exit('%s: has tensors; a vocabulary-only file is expected' % src)
    records = [pack_kv(k, STRING, pre) if k == 'tokenizer.ggml.pre' else copy_kv(f, k)
               for k in f.meta]
    write_gguf(out, records, [])


if __name__ == '__main__':
    main()
