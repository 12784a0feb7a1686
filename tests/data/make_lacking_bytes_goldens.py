#!/usr/bin/env python3
"""make_lacking_bytes_goldens.py — golden/lacking_bytes.jsonl: texts that hold the bytes
StarCoder's, Refact's and MPT's byte-level vocabularies have no token for, and the ids
llama.cpp's llama-tokenize gives them on each vocabulary:

    make_lacking_bytes_goldens.py LLAMA_TOKENIZE MODELS_DIR OUT.jsonl

MODELS_DIR holds llama.cpp's models/ggml-vocab-{starcoder,refact,mpt}.gguf (llama.cpp
0.4.0: node-llama-cpp@3.21.1's source bundle). StarCoder's and Refact's lack the byte F1
(besides C0, C1 and F5-FF, which no UTF-8 holds), which starts only code points of
planes 4-7, where Unicode assigns nothing; llama.cpp drops such a byte. One JSON object a line: "text"
and, for each vocabulary, its ids (no BOS). Deterministic. Python 3."""
import json
import os
import subprocess
import sys
import tempfile

VOCABS = ['starcoder', 'refact', 'mpt']
TEXTS = [
    '\U00040000',
    'a\U00040000b',
    '\U00080000 x',
    ' \U000F0000',
    '\U0001F600\U0004FFFF',
    'x = 0xF1; // \u00f1, \U00050000 and \u00ff',
    'def f(n):\n    return n * 2  # 12345\n',
    '\U0007FFFF\U00080000\U000BFFFF',
]


def ids_of(tool, vocab, text):
    with tempfile.NamedTemporaryFile(suffix='.txt') as f:
        f.write(text.encode('utf-8'))
        f.flush()
        out = subprocess.run([tool, '-m', vocab, '-f', f.name, '--ids', '--no-bos', '--log-disable'],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tool, models, out = sys.argv[1:]
    with open(out, 'w', encoding='utf-8') as f:
        for text in TEXTS:
            row = {'text': text}
            for v in VOCABS:
                row[v] = ids_of(tool, os.path.join(models, 'ggml-vocab-%s.gguf' % v), text)
            f.write(json.dumps(row, ensure_ascii=False, separators=(',', ':')) + '\n')


if __name__ == '__main__':
    main()
