#!/usr/bin/env python3
"""make_harmony_template.py — writes golden/template_harmony.jsonl: gpt-oss's chat template
(the harmony format) rendered by Jinja for a system prompt and two user turns, cut into
llmchat's turns, with the o200k_harmony token ids of each turn:

    make_harmony_template.py TEMPLATE.jinja NODE_MODULES LLAMA_TOKENIZE OUT.jsonl

TEMPLATE.jinja is llama.cpp 0.4.0's models/templates/openai-gpt-oss-120b.jinja (gpt-oss's
chat_template.jinja), rendered by Debian's python3-jinja2 set up as Hugging Face's
apply_chat_template sets it up (a sandbox, trim_blocks and lstrip_blocks), with the
template's defaults (reasoning_effort "medium", no tools) and strftime_now giving the
fixed date DATE, so that the test can ask llmchat for the same. Ids: gpt-tokenizer
4.0.0's o200k_harmony (NODE_MODULES; `npm pack gpt-tokenizer@4.0.0`) on the text between
the harmony markers, each marker its o200k_harmony id (gpt-tokenizer's encoder does not
split its own markers out of text). LLAMA_TOKENIZE (llama.cpp 0.4.0's llama-tokenize) must
give the same ids for each text, special tokens parsed, on the vocabulary test_template.c
builds ("harmony-vocab": tests/data/phi4-mini-vocab.gguf.gz's ids 0-199997, which are
o200k_base, followed by o200k_harmony's 1,090 special tokens as control tokens; BOS
<|startoftext|>, EOS <|return|>); the script stops when it does not.

A line: {"system", "user", "first", "text", "ids"} and, for a second turn, "before" (the
first turn's text, the reply as the template renders an earlier reply — its final
channel, analysis dropped, closed by <|end|>) and "jinja" (the whole conversation as Jinja
renders it): before + text == jinja. Python 3 with jinja2, node.
"""
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

import jinja2
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
DATE = '2025-08-05'
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
# o200k_harmony's special tokens (gpt-tokenizer 4.0.0, cjs/encodingParams/o200k_harmony.js)
SPECIAL = {'<|startoftext|>': 199998, '<|endoftext|>': 199999, '<|return|>': 200002,
           '<|constrain|>': 200003, '<|channel|>': 200005, '<|start|>': 200006,
           '<|end|>': 200007, '<|message|>': 200008, '<|call|>': 200012,
           '<|endofprompt|>': 200018}
N_VOCAB = 201088

DIALOGS = [
    ('You are a pirate. Answer briefly.', 'Where is the treasure?', 'Under the palm, matey.',
     'And the map?'),
    ('', 'Tell me a story about a dog named Max.', 'Max ran to the park.', 'And one about a cat?'),
    ('Be kind.', '  Bonjour, ça va ? 日本語\ttabs  and  spaces \n', 'Oui !', '\nx  '),
]


def gstr(b):
    return struct.pack('<Q', len(b)) + b


def special_pieces():
    byid = {v: k for k, v in SPECIAL.items()}
    return [byid.get(i, '<|reserved_%d|>' % i).encode() for i in range(199998, N_VOCAB)]


def harmony_vocab(src, dst):
    """Phi-4-mini's o200k vocabulary cut to o200k_base, o200k_harmony's specials after it."""
    data = gzip.open(src).read()
    pos = 24
    _, _, n_tensors, n_kv = struct.unpack_from('<4sIQQ', data, 0)
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

    extra = special_pieces()
    for _ in range(n_kv):
        start = pos
        (n,) = take('Q')
        key = data[pos:pos + n]
        pos += n
        (t,) = take('I')
        vstart = pos
        skip(t)
        raw = data[start:pos]
        if key == b'tokenizer.ggml.tokens':
            p = vstart + 12
            for _ in range(199998):
                (n,) = struct.unpack_from('<Q', data, p)
                p += 8 + n
            raw = (gstr(key) + struct.pack('<IIQ', 9, 8, N_VOCAB) + data[vstart + 12:p] +
                   b''.join(gstr(x) for x in extra))
        elif key == b'tokenizer.ggml.token_type':
            raw = (gstr(key) + struct.pack('<IIQ', 9, 5, N_VOCAB) +
                   data[vstart + 12:vstart + 12 + 4 * 199998] + struct.pack('<%di' % len(extra), *([3] * len(extra))))
        elif key.startswith(b'tokenizer.ggml.') and key.endswith(b'_token_id') or \
                key in (b'general.name', b'tokenizer.chat_template', b'general.architecture'):
            continue
        out.append(raw)
    out.append(gstr(b'general.architecture') + struct.pack('<I', 8) + gstr(b'gpt-oss'))
    out.append(gstr(b'general.name') + struct.pack('<I', 8) + gstr(b'harmony-vocab'))
    out.append(gstr(b'tokenizer.ggml.bos_token_id') + struct.pack('<II', 4, 199998))
    out.append(gstr(b'tokenizer.ggml.eos_token_id') + struct.pack('<II', 4, 200002))
    out.append(gstr(b'tokenizer.ggml.padding_token_id') + struct.pack('<II', 4, 199999))
    open(dst, 'wb').write(struct.pack('<4sIQQ', b'GGUF', 3, 0, len(out)) + b''.join(out))


def render(template, messages):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)
    env.globals['raise_exception'] = raise_exception
    env.globals['strftime_now'] = lambda fmt: DATE
    return env.from_string(template).render(messages=messages, add_generation_prompt=True)


def harmony_ids(node_modules, text):
    js = ("const o=require(process.argv[1]+'/gpt-tokenizer/cjs/encoding/o200k_harmony');"
          "const m=JSON.parse(process.argv[2]);let s=require('fs').readFileSync(0,'utf8');"
          "const keys=Object.keys(m);const out=[];while(s.length){let at=-1,k=null;"
          "for(const x of keys){const i=s.indexOf(x);if(i>=0&&(at<0||i<at)){at=i;k=x;}}"
          "if(at<0){out.push(...o.encode(s));break;}if(at>0)out.push(...o.encode(s.slice(0,at)));"
          "out.push(m[k]);s=s.slice(at+k.length);}console.log(JSON.stringify(out));")
    r = subprocess.run(['node', '-e', js, node_modules, json.dumps(SPECIAL)],
                       input=text.encode(), capture_output=True, check=True)
    return json.loads(r.stdout.decode())


def llama_ids(tool, vocab, text):
    r = subprocess.run([tool, '-m', vocab, '--stdin', '--ids', '--no-bos', '--log-disable'],
                       input=text.encode(), capture_output=True, check=True)
    return json.loads(r.stdout.decode().strip().split('\n')[-1])


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    tmpl_path, node_modules, tool, out = sys.argv[1:]
    tmpl = open(tmpl_path).read()
    vocab = os.path.join(tempfile.mkdtemp(), 'harmony-vocab.gguf')
    harmony_vocab(os.path.join(HERE, 'phi4-mini-vocab.gguf.gz'), vocab)

    def ids(text):
        a, b = harmony_ids(node_modules, text), llama_ids(tool, vocab, text)
        assert a == b, (text, a, b)
        return a
    lines = []
    for system, user1, reply, user2 in DIALOGS:
        sysmsg = [{'role': 'system', 'content': system}] if system else []
        one = render(tmpl, sysmsg + [{'role': 'user', 'content': user1}])
        whole = render(tmpl, sysmsg + [{'role': 'user', 'content': user1},
                                       {'role': 'assistant', 'content': reply,
                                        'thinking': 'Some analysis.'},
                                       {'role': 'user', 'content': user2}])
        before = one + '<|channel|>final<|message|>' + reply + '<|end|>'
        assert whole.startswith(before), (whole, before)
        two = whole[len(before):]
        lines.append({'system': system, 'user': user1, 'first': True, 'text': one, 'ids': ids(one)})
        ids_whole, ids_before = ids(whole), ids(before)
        assert ids_whole[:len(ids_before)] == ids_before
        lines.append({'system': system, 'user': user2, 'first': False, 'text': two,
                      'ids': ids_whole[len(ids_before):], 'before': before, 'jinja': whole})
    with open(out, 'w') as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False) + '\n')
    print('%d lines, %d texts tokenized alike by gpt-tokenizer and llama-tokenize' %
          (len(lines), 3 * len(DIALOGS)), file=sys.stderr)


if __name__ == '__main__':
    main()
