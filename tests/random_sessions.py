#!/usr/bin/env python3
"""random_sessions.py — `make random-sessions`: random chat sessions, each checked
against an invariant that holds whatever the session did. Four kinds:

  replay    -m chat sessions (messages, /knock, /vector, /set, /system, /reset, a
            small context that overflows; --lookup, --kv-cache f32, --weights f32,
            other kernels), traced; `--replay TRACE` (also with the model named)
            must reproduce every one.
  persist   -m chat sessions saved with /save; a fresh session that /loads the file
            must give the next reply byte for byte as the first session does.
  tui       TUI sessions in tmux (messages, commands, and pane keys: pause, step,
            take back, rewind, choose a candidate, switch branches), traced; each
            must end with exit status 0 and its trace must replay.
  branches  TUI sessions saved with /save --all; a fresh TUI that /loads the file and
            saves it again must write the same chat (a reply still open when saved
            comes back stopped, as SAVED CHATS says).

    random_sessions.py LLMCHAT SRCDIR [KIND ...] [--trials N] [--seed S] [--model FILE]

Each kind runs N trials (default 30) on the bundled chat model, or on FILE; a trial
is made from its seed (S + its number), printed with its actions when it fails, so a
failure is rerun with --seed and --trials 1. Exit status 1 when any trial failed. Not
part of make check: it runs for minutes and what it finds becomes a test. Python 3,
tmux for the two TUI kinds."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

MESSAGES = ["Tell me a story about a dog.", "Tom had a red ball.", "Once upon a time",
            "The cat sat on the mat and looked at the bird."]
PANE_KEYS = ['p', 'n', 'n', 'n', 'BSpace', 'r', '1', '2', '3', '<', '>', 'Left', 'Left',
             'Right', 'Home', 'End', '[', ']', 'm', 'c', '+', '-', 'C', 'z']


class Runner:
    def __init__(self, llmchat, srcdir, model, tmp):
        self.llmchat, self.model, self.tmp = llmchat, model, tmp
        self.vector = os.path.join(srcdir, 'tests', 'data', 'control_vector', 'happy.gguf')
        self.tok = []
        if model.endswith('.bin'):
            self.tok = ['-z', os.path.join(os.path.dirname(model), 'tok512.bin')]
        self.env = dict(os.environ, XDG_STATE_HOME=tmp + '/state', XDG_DATA_HOME=tmp + '/data',
                        XDG_CONFIG_HOME=tmp + '/config', TMUX_TMPDIR=tmp, LC_ALL='C.UTF-8')
        self.ctx = self.model_ctx()

    def run(self, args, stdin=''):
        return subprocess.run([self.llmchat] + args, input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=300)

    def model_ctx(self):
        r = self.run(['-m', 'chat', '-c', '99999'] + self.tok + [self.model])
        digits = r.stderr.split("model's context (")[-1].split(')')[0]
        return int(digits) if digits.isdigit() else 512

    def chat_lines(self, rnd, n, settings=True):
        lines = []
        for _ in range(n):
            c = rnd.random()
            if not settings and 0.86 <= c < 0.92:
                continue  # a sampler change: the loaded session's draws differ
            if c < 0.5:
                lines.append(rnd.choice(MESSAGES))
            elif c < 0.62:
                lines.append('/knock head %d:%d' % (rnd.randint(0, 4), rnd.randint(0, 7)))
            elif c < 0.7:
                lines.append('/knock restore head %d:%d' % (rnd.randint(0, 4), rnd.randint(0, 7)))
            elif c < 0.8:
                lines.append('/vector load %s %s' % (self.vector, rnd.choice(['0.5', '1', '-1'])))
            elif c < 0.86:
                lines.append('/vector drop happy')
            elif c < 0.92:
                lines.append('/set temperature %s' % rnd.choice(['0', '0.7', '1.5']))
            else:
                lines.append(rnd.choice(['/system Be kind.', '/system', '/reset']))
        return lines

    def context(self, rnd):
        return min(rnd.choice([96, 128, 192, 512]), self.ctx)

    # ---- the kinds: each returns None, or what went wrong ----

    def replay(self, rnd, seed):
        trace = self.tmp + '/replay.jsonl'
        extra = rnd.choice([[], ['--lookup'], ['--kv-cache', 'f32'], ['--weights', 'f32'],
                            ['--kernels', 'avx2'], ['--kernels', 'scalar']])
        lines = self.chat_lines(rnd, rnd.randint(2, 10)) + [rnd.choice(MESSAGES)]
        args = ['-m', 'chat', '-T', '1', '-t', rnd.choice(['0', '1']), '-s', str(seed), '-n', '24',
                '-c', str(self.context(rnd)), '--trace', trace] + extra + self.tok + [self.model]
        a = self.run(args, '\n'.join(lines) + '\n')
        if a.returncode != 0 and extra[:1] == ['--kernels'] and 'kernels' in a.stderr:
            return None  # kernels this CPU lacks
        if a.returncode != 0:
            return 'the session: exit %d: %s' % (a.returncode, a.stderr[-300:]), args, lines
        named = [self.model] if rnd.random() < 0.5 else []
        b = self.run(['--replay', trace, '-T', '1'] + self.tok + named)
        if b.returncode != 0:
            return 'the replay: exit %d: %s' % (b.returncode, (b.stdout + b.stderr)[-400:]), args, lines
        return None

    def persist(self, rnd, seed):
        saved = self.tmp + '/persist.json'
        ctx = self.context(rnd)
        lines = self.chat_lines(rnd, rnd.randint(2, 10), settings=False)
        last = rnd.choice(MESSAGES)
        base = ['-m', 'chat', '-T', '1', '-t', '0', '--weights', 'f32', '-n', '24', '-c', str(ctx)]
        base += self.tok + [self.model]
        if os.path.exists(saved):
            os.remove(saved)
        a = self.run(base, '\n'.join(lines + ['/save ' + saved, last]) + '\n')
        if not os.path.exists(saved):
            return None  # nothing to save (no turn yet)
        b = self.run(base, '\n'.join(['/load ' + saved, last]) + '\n')
        ra, rb = a.stdout.split('\n'), b.stdout.split('\n')
        if a.returncode or b.returncode or ra[-2:] != rb[-2:]:
            return ('the reply after /load differs: %r against %r (exit %d, %d)' %
                    (ra[-2:], rb[-2:], a.returncode, b.returncode), base, lines + [last])
        return None

    # ---- the TUI, in tmux ----

    def tmux(self, *args):
        return subprocess.run(['tmux'] + list(args), capture_output=True, text=True, env=self.env)

    def tui(self, args, actions):
        """Runs the TUI with args, sends the actions (key names, or text sent as typed
        and ended by Enter), quits; returns its exit status as text."""
        done = self.tmp + '/exit'
        if os.path.exists(done):
            os.remove(done)
        self.tmux('kill-server')
        cmd = ' '.join([self.llmchat] + args) + '; echo $? > ' + done
        self.tmux('new-session', '-d', '-s', 'r', '-x', '100', '-y', '30', cmd)
        time.sleep(0.6)
        for what, pause in actions:
            if what.startswith('/') or what in MESSAGES:
                self.tmux('send-keys', '-t', 'r', 'C-u')
                self.tmux('send-keys', '-t', 'r', '-l', what)
                self.tmux('send-keys', '-t', 'r', 'Enter')
            else:
                self.tmux('send-keys', '-t', 'r', what)
            time.sleep(pause)
        time.sleep(0.4)
        for attempt in range(8):
            if os.path.exists(done):
                break
            if 'Quit anyway' in self.tmux('capture-pane', '-p', '-t', 'r').stdout:
                self.tmux('send-keys', '-t', 'r', 'y')
            else:
                self.tmux('send-keys', '-t', 'r', 'Escape')
                self.tmux('send-keys', '-t', 'r', 'C-u')
                self.tmux('send-keys', '-t', 'r', '-l', '/quit')
                self.tmux('send-keys', '-t', 'r', 'Enter')
            time.sleep(0.6)
        status = open(done).read().strip() if os.path.exists(done) else 'none (it did not quit)'
        self.tmux('kill-server')
        return status

    def tui_actions(self, rnd, n, commands):
        acts = []
        for _ in range(n):
            c = rnd.random()
            if c < 0.25:
                acts.append((rnd.choice(MESSAGES), 0.6))
            elif c < 0.35 and commands:
                acts.append((rnd.choice(commands), 0.2))
            else:  # keys of a pane: Tab there, Shift-Tab back to the input line
                k = rnd.randint(1, 3)
                acts += [('Tab', 0.05)] * k
                acts += [(rnd.choice(PANE_KEYS), rnd.choice([0.02, 0.1, 0.3]))
                         for _ in range(rnd.randint(1, 4))]
                acts += [('BTab', 0.05)] * k
        return acts

    def tui_replay(self, rnd, seed):
        trace = self.tmp + '/tui.jsonl'
        commands = ['/knock head 1:2', '/knock restore head 1:2', '/vector load %s 0.5' % self.vector,
                    '/vector drop happy', '/set temperature 0', '/set temperature 1',
                    '/system Be kind.', '/reset']
        extra = rnd.choice([[], ['--lookup'], ['--slow-motion', '30']])
        args = ['-s', str(seed), '-n', '40', '-c', str(self.context(rnd)), '--trace', trace]
        args += extra + self.tok + [self.model]
        acts = self.tui_actions(rnd, rnd.randint(5, 25), commands)
        if os.path.exists(trace):
            os.remove(trace)
        status = self.tui(args, acts)
        if status != '0':
            return 'the TUI: exit status %s' % status, args, [a for a, _ in acts]
        b = self.run(['--replay', trace, '-T', '1'] + self.tok)
        if b.returncode != 0 and 'holds no step records' not in b.stderr:
            keep = os.path.join(os.path.dirname(self.tmp), 'llmchat-random-tui-%d.jsonl' % seed)
            shutil.copy(trace, keep)
            return ('the replay of %s: exit %d: %s' % (keep, b.returncode, (b.stdout + b.stderr)[-400:]),
                    args, [a for a, _ in acts])
        return None

    def branches(self, rnd, seed):
        a_file, b_file = self.tmp + '/a.json', self.tmp + '/b.json'
        for f in (a_file, b_file):
            if os.path.exists(f):
                os.remove(f)
        commands = ['/knock head 1:2', '/knock restore head 1:2', '/vector load %s 0.5' % self.vector,
                    '/vector drop happy']
        acts = self.tui_actions(rnd, rnd.randint(4, 18), commands)
        acts += [('Escape', 0.3), ('/save --all ' + a_file, 0.5)]
        args = ['-s', str(seed), '-n', '30', '--slow-motion', '10'] + self.tok + [self.model]
        first = self.tui(args, acts)
        if first != '0':
            return 'the TUI: exit status %s' % first, args, [a for a, _ in acts]
        if not os.path.exists(a_file):
            return None  # nothing to save (no turn yet)
        again = self.tui(['-n', '30'] + self.tok + [self.model],
                         [('/load ' + a_file, 1.0), ('/save --all ' + b_file, 0.5)])
        if again != '0' or not os.path.exists(b_file):
            return 'the TUI that loaded it: exit status %s' % again, args, [a for a, _ in acts]
        a, b = json.load(open(a_file)), json.load(open(b_file))
        for t, u in zip(a.get('turns', []), b.get('turns', [])):
            if not t.get('complete') and not t.get('cut') and 'end_token' not in t:
                for k in ('complete', 'cut', 'end_token'):  # open when saved: back stopped
                    t.pop(k, None)
                    u.pop(k, None)
        if a != b:
            keep = os.path.join(os.path.dirname(self.tmp), 'llmchat-random-branches-%d' % seed)
            os.makedirs(keep, exist_ok=True)
            shutil.copy(a_file, keep)
            shutil.copy(b_file, keep)
            return 'saved again after /load, the chat differs (both in %s)' % keep, args, \
                [x for x, _ in acts]
        return None


def main():
    argv = sys.argv[1:]
    if len(argv) < 2:
        sys.exit(__doc__)
    llmchat, srcdir = argv[:2]
    kinds, trials, seed, model = [], 30, 0, None
    rest = argv[2:]
    while rest:
        a = rest.pop(0)
        if a in ('--trials', '--seed', '--model') and rest:
            v = rest.pop(0)
            if a == '--model':
                model = v
            elif a == '--trials':
                trials = int(v)
            else:
                seed = int(v)
        elif a in ('replay', 'persist', 'tui', 'branches'):
            kinds.append(a)
        else:
            sys.exit('random_sessions.py: unknown argument %r\n%s' % (a, __doc__))
    kinds = kinds or ['replay', 'persist', 'tui', 'branches']
    model = model or os.path.join(srcdir, 'data', 'models', 'chat260K.bin')
    if any(k in ('tui', 'branches') for k in kinds) and not shutil.which('tmux'):
        sys.exit('random_sessions.py: the tui and branches kinds need tmux')
    tmp = tempfile.mkdtemp(prefix='llmchat-random.')
    runner = Runner(llmchat, srcdir, model, tmp)
    failed = 0
    for kind in kinds:
        check = {'replay': runner.replay, 'persist': runner.persist, 'tui': runner.tui_replay,
                 'branches': runner.branches}[kind]
        bad = 0
        for t in range(trials):
            s = seed + t
            why = check(random.Random(s), s)
            if why:
                bad += 1
                print('%s, seed %d: %s\n  args: %s\n  actions: %s' % (kind, s, why[0], why[1], why[2]))
        print('%s: %d of %d sessions failed (seeds %d-%d, %s)' %
              (kind, bad, trials, seed, seed + trials - 1, os.path.basename(model)))
        failed += bad
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
