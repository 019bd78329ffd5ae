#!/usr/bin/env python3
"""How far llama.cpp is from itself: the noise floor behind the tolerances of
tests/models/test-llama-goldens.cpp.

Run it with a llama-cpp-python 0.3.36 built for another instruction set than
the one that wrote the goldens, e.g. in a scratch venv:
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF" \
        /tmp/venv/bin/pip install llama-cpp-python==0.3.36 numpy
    /tmp/venv/bin/python tests/models/oracle-noise.py [--name smollm2|gemma3-270m]
It applies the test's criteria to that build against the goldens, per prompt
and over all of them.
"""
import json, numpy as np
from llama_cpp import Llama
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'examples' / 'models'))
import vt_models
import argparse
GOLDENS = {'smollm2': ('smollm2-q4_1.json', 512), 'gemma3-270m': ('gemma3-270m-q4_k_m.json', 1024)}
ap = argparse.ArgumentParser()
ap.add_argument('--name', default='smollm2', choices=sorted(GOLDENS))
name = ap.parse_args().name
M = str(vt_models.model_path(name))
g = json.load(open(ROOT / 'tests' / 'models' / 'goldens' / GOLDENS[name][0]))
nb = GOLDENS[name][1]
l=Llama(model_path=M, n_ctx=2048, n_batch=nb, n_ubatch=nb, n_threads=2, logits_all=True, flash_attn=False, verbose=False)
flips=[]; checked=0; allsq=[]; mx=0; div=[]
for p in g['prompts']:
    if 'greedy' not in p: continue
    ids = p['ids_special'] if p.get('eval_special') else p['ids']
    seq = ids + p['greedy']
    l.reset(); l.eval(seq); A=np.array(l.scores[:len(seq)])
    st=len(ids)-1
    for i in range(64):
        m=p['greedy_margins'][i]
        if m>0.05:
            checked+=1
            if A[st+i].argmax()!=p['greedy'][i]: flips.append((p['name'],i,m))
    tf=p['tf']
    psq=[]
    for k,pos in enumerate(tf['positions']):
        d=np.abs(A[pos][tf['top_ids'][k]]-np.array(tf['top_logits'][k])); allsq+=list(d*d); psq+=list(d*d); mx=max(mx,d.max())
    print(' %-16s teacher-forced rms %.3f' % (p['name'], np.sqrt(np.mean(psq))))
    # free-running greedy
    l.reset(); l.eval(ids); out=[]
    for i in range(64):
        t=int(np.array(l.scores[l.n_tokens-1]).argmax()); out.append(t); l.eval([t])
    f=next((i for i in range(64) if out[i]!=p['greedy'][i]), None)
    if f is not None: div.append((p['name'], f, p['greedy_margins'][f]))
print('this llama.cpp build against the goldens:')
print(' teacher-forced top-20: rms %.3f max %.3f' % (np.sqrt(np.mean(allsq)), mx))
print(' greedy path top-1 flips at margin>0.05: %d of %d' % (len(flips), checked), flips)
print(' free-running greedy divergences:', div)
