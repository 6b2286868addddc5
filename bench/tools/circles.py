#!/usr/bin/env python3
"""Circles among the files of each module of a Rust source tree (bench/skeleton.sh; the test
that holds the line is tests/layers.rs `no_circle_among_the_files_of_a_module`, which this
mirrors): each file's paths (`super::x`, `self::x`, `crate::m::x`, a child's `x::` from its
root) resolved to the file they name; one line per strongly connected group of files, then
`N circles`. Usage: circles.py SRC_DIR"""
import os,re,sys
root=sys.argv[1] if len(sys.argv)>1 else 'src'
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f); rel=os.path.relpath(p,root)[:-3].split('/')
            if rel[-1]=='mod': rel=rel[:-1]
            if rel==['lib']: rel=[]
            files[tuple(rel)]=p
def strip(t):
    t=re.sub(r'//[^\n]*','',t)
    i=t.find('#[cfg(test)]\nmod tests {')
    if i>=0: t=t[:i]
    return t
def group_items(t,j):
    depth=0; item=''; items=[]
    while j<len(t):
        c=t[j]
        if c=='{': depth+=1
        if c=='}':
            if depth==0: break
            depth-=1
        if c==',' and depth==0: items.append(item); item=''
        else: item+=c
        j+=1
    items.append(item)
    return [re.match(r'\s*((?:\w+::)*\w*)',it).group(1).split('::') for it in items]
edges={}
for m,p in files.items():
    t=strip(open(p).read())
    tg=set()
    for mm in re.finditer(r'(?<![\w:$.])((?:super::)+|self::|crate::)?((?:[A-Za-z_]\w*::)*)(\{|[A-Za-z_]\w*)',t):
        pre,path,last=mm.groups()
        pre=pre or ''
        segs=[x for x in path.split('::') if x]
        if not pre and not segs: continue
        if pre.startswith('super'): base=list(m[:len(m)-pre.count('super::')])
        elif pre=='self::': base=list(m)
        elif pre=='crate::': base=[]
        else:
            base=list(m)
            if tuple(base+[segs[0]]) not in files: continue
        lists=[segs+it for it in group_items(t,mm.end())] if last=='{' else [segs+[last]]
        for s in lists:
            cur=list(base)
            for x in s:
                if tuple(cur+[x]) in files: cur=cur+[x]
                else: break
            if tuple(cur)!=m and len(cur)>0 and m and cur[0]==m[0]:
                tg.add(tuple(cur))
    edges[m]=tg
idx={};low={};st=[];on=set();sccs=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges.get(v,()):
        if w not in idx: sc(w); low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v: break
        if len(comp)>1: sccs.append(comp)
for v in files:
    if v not in idx: sc(v)
for s in sccs:
    print(len(s), sorted('::'.join(x) for x in s))
    for a in s:
        for b in edges[a]:
            if b in s: print('   ', '::'.join(a),'->','::'.join(b))
print(len(sccs),'cycles')
