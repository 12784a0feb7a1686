#!/usr/bin/env python3
"""make_template_goldens.py — writes golden/template_tokens.jsonl: each chat template
rendered for a few turns, and the token ids llama.cpp gives that rendered prompt.

    make_template_goldens.py LLAMA_TOKENIZE OUT.jsonl [LLAMA3_VOCAB.gguf]

LLAMA_TOKENIZE is llama.cpp's llama-tokenize (ggerganov/llama.cpp@c392e509; the project's
anchors/llama.cpp). Two vocabularies: tests/data/ggml-vocab-llama-spm.gguf (Llama 2's:
the templates' markers such as "<|user|>" are plain text there), and the same with two
control tokens appended, "<|im_start|>" (id 32000) and "<|im_end|>" (32001), score 0,
token type 3: the recipe tests/test_template.c follows to make the same vocabulary at
test time ("chatml-vocab"). The rendered text spells special tokens as their pieces;
llama-tokenize parses them (it adds no BOS of its own: --no-bos), so each line's ids are
what llama.cpp makes of the prompt.
With LLAMA3_VOCAB (llama3-vocab.gguf.gz decompressed: Llama 3's byte-level BPE
vocabulary), two more: "llama3-vocab" with the llama3 and chatml templates (ChatML's
markers are text there), and "llama3-chatml-vocab", the same with <|im_start|> (128256)
and <|im_end|> (128257) appended as control tokens, with chatml: a SmolLM2-like
vocabulary (byte-level BPE, ChatML markers as special tokens). User texts here hold no special-token spellings:
that llmchat never parses them from user text is tested separately.

Python 3 standard library only.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gstr(b):
    return struct.pack('<Q', len(b)) + b


def chatml_vocab(src, dst):
    """src's vocabulary with <|im_start|> and <|im_end|> appended as control tokens."""
    data = open(src, 'rb').read()
    pos = 24
    magic, version, n_tensors, n_kv = struct.unpack_from('<4sIQQ', data, 0)
    assert n_tensors == 0
    out = []

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from('<' + fmt, data, pos)
        pos += struct.calcsize('<' + fmt)
        return v

    def skip(t):
        nonlocal pos
        if t in SCALAR:
            pos += SCALAR[t]
        elif t == 8:
            (n,) = take('Q')
            pos += n
        else:
            et, n = take('IQ')
            for _ in range(n):
                skip(et)

    for _ in range(n_kv):
        start = pos
        (n,) = take('Q')
        key = data[pos:pos + n]
        pos += n
        (t,) = take('I')
        vstart = pos
        skip(t)
        raw = data[start:pos]
        if key in (b'tokenizer.ggml.tokens', b'tokenizer.ggml.scores', b'tokenizer.ggml.token_type'):
            et, count = struct.unpack_from('<IQ', data, vstart)
            body = data[vstart + 12:pos]
            if key == b'tokenizer.ggml.tokens':
                body += gstr(b'<|im_start|>') + gstr(b'<|im_end|>')
            elif key == b'tokenizer.ggml.scores':
                body += struct.pack('<ff', 0.0, 0.0)
            else:
                body += struct.pack('<ii', 3, 3)
            raw = gstr(key) + struct.pack('<IIQ', 9, et, count + 2) + body
        out.append(raw)
    head = struct.pack('<4sIQQ', b'GGUF', 3, 0, len(out)) + b''.join(out)
    open(dst, 'wb').write(head)


def render(template, system, user, first, bos='<s>'):
    """The turn as text; bos: the vocabulary's BOS piece."""
    s = ''
    if template == 'llama2':
        s += '<s>[INST] '
        if first and system:
            s += '<<SYS>>\n' + system + '\n<</SYS>>\n\n'
        s += user + ' [/INST]'
    elif template == 'mistral':
        s += '<s>' if first else ''
        s += '[INST] ' + (system + '\n\n' if first and system else '') + user + ' [/INST]'
    elif template == 'zephyr':
        s += '<s>' if first else '\n'
        if first and system:
            s += '<|system|>\n' + system + '</s>\n'
        s += '<|user|>\n' + user + '</s>\n<|assistant|>\n'
    elif template == 'chatml':
        s += bos if first else '\n'
        if first and system:
            s += '<|im_start|>system\n' + system + '<|im_end|>\n'
        s += '<|im_start|>user\n' + user + '<|im_end|>\n<|im_start|>assistant\n'
    elif template == 'llama3':
        ws = ' \t\n\v\f\r'  # llama.cpp trims with C's isspace
        s += bos if first else ''
        if first and system:
            s += '<|start_header_id|>system<|end_header_id|>\n\n' + system.strip(ws) + '<|eot_id|>'
        s += '<|start_header_id|>user<|end_header_id|>\n\n' + user.strip(ws) + '<|eot_id|>'
        s += '<|start_header_id|>assistant<|end_header_id|>\n\n'
    return s


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    tool, out = sys.argv[1], sys.argv[2]
    llama = os.path.join(HERE, 'ggml-vocab-llama-spm.gguf')
    tmp = tempfile.mkdtemp()
    chatml = os.path.join(tmp, 'chatml-vocab.gguf')
    chatml_vocab(llama, chatml)
    templates = ('llama2', 'mistral', 'zephyr', 'chatml')
    vocabs = [('ggml-vocab-llama-spm.gguf', llama, templates, '<s>'),
              ('chatml-vocab', chatml, templates, '<s>')]
    if len(sys.argv) == 4:
        llama3_chatml = os.path.join(tmp, 'llama3-chatml-vocab.gguf')
        chatml_vocab(sys.argv[3], llama3_chatml)
        vocabs += [('llama3-vocab', sys.argv[3], ('llama3', 'chatml'), '<|begin_of_text|>'),
                   ('llama3-chatml-vocab', llama3_chatml, ('chatml',), '<|begin_of_text|>')]
    turns = [
        ('You are a pirate. Answer briefly.', 'Where is the treasure?', True),
        ('', 'Tell me a story about a dog named Max.', True),
        ('', 'And one about a cat?', False),
        ('Be kind.', 'Bonjour, ça va ? 日本語\ttabs  and  spaces', True),
        ('  Padded system.\n', '\n  Padded user?  \t', True),
    ]
    with open(out, 'w') as f:
        for vname, vpath, names, bos in vocabs:
            for template in names:
                for system, user, first in turns:
                    text = render(template, system, user, first, bos)
                    r = subprocess.run([tool, '-m', vpath, '--stdin', '--ids', '--no-bos', '--no-escape',
                                        '--log-disable'], input=text.encode(), capture_output=True,
                                       check=True)
                    ids = json.loads(r.stdout.decode().strip().splitlines()[-1])
                    f.write(json.dumps({'vocab': vname, 'template': template, 'system': system,
                                        'user': user, 'first': first, 'text': text, 'ids': ids},
                                       ensure_ascii=False) + '\n')


if __name__ == '__main__':
    main()
