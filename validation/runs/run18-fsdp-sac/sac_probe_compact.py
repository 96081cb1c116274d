import sys,statistics as st,torch,torch.nn as nn,torch.nn.functional as F
from collections import defaultdict
C=torch.cuda
from torch.utils.checkpoint import checkpoint as ck,create_selective_checkpoint_contexts as csc,CheckpointPolicy as CP
L=lambda i,o:nn.Linear(i,o,bias=False)
class N(nn.Module):
 def __init__(s,d):super().__init__();s.w=nn.Parameter(torch.ones(d))
 def forward(s,x):y=x.float();return (y*torch.rsqrt(y.pow(2).mean(-1,keepdim=True)+1e-5)).type_as(x)*s.w
def rope(q,k,f):
 a=torch.view_as_complex(q.float().reshape(*q.shape[:-1],-1,2));b=torch.view_as_complex(k.float().reshape(*k.shape[:-1],-1,2));f=f.view(1,a.shape[1],1,a.shape[-1])
 return torch.view_as_real(a*f).flatten(3).type_as(q),torch.view_as_real(b*f).flatten(3).type_as(k)
def rep(x,n):b,s,h,d=x.shape;return x[:,:,:,None,:].expand(b,s,h,n,d).reshape(b,s,h*n,d)
class B(nn.Module):
 def __init__(s,d=4096,h=32,kv=8,f=14336):
  super().__init__();s.h,s.kv,s.hd=h,kv,d//h;s.wq,s.wk,s.wv,s.wo=L(d,d),L(d,kv*s.hd),L(d,kv*s.hd),L(d,d);s.w1,s.w2,s.w3=L(d,f),L(f,d),L(d,f);s.n1,s.n2=N(d),N(d)
 def forward(s,x,fc):
  b,n,_=x.shape;y=s.n1(x);q,k,v=s.wq(y).view(b,n,s.h,s.hd),s.wk(y).view(b,n,s.kv,s.hd),s.wv(y).view(b,n,s.kv,s.hd);q,k=rope(q,k,fc);r=s.h//s.kv
  o=F.scaled_dot_product_attention(q.transpose(1,2),rep(k,r).transpose(1,2),rep(v,r).transpose(1,2),is_causal=True).transpose(1,2).contiguous().view(b,n,-1)
  x=x+s.wo(o);y=s.n2(x);return x+s.w2(F.silu(s.w1(y))*s.w3(y))
A=torch.ops.aten;SV={A.mm.default,A._scaled_dot_product_flash_attention.default,A._scaled_dot_product_cudnn_attention.default}
def ctx():
 m=defaultdict(int)
 def p(c,fn,*a,**k):
  key=("r" if c.is_recompute else "f");m[key]+=fn==A.mm.default
  return CP.MUST_SAVE if fn in SV and not(fn==A.mm.default and m[key]%2==0) else CP.PREFER_RECOMPUTE
 return csc(p)
def run(bs,x,fc,md):
 for i,b in enumerate(bs):
  if md=="none" or(md=="every2" and(i+1)%2):x=b(x,fc)
  elif md=="op":x=ck(b,x,fc,use_reentrant=0,context_fn=ctx)
  else:x=ck(b,x,fc,use_reentrant=0)
 return x
Ly,S,M=4,int(sys.argv[1]),int(sys.argv[2]);torch.manual_seed(0)
bs=nn.ModuleList([B() for _ in range(Ly)]).cuda().bfloat16()
t=torch.outer(torch.arange(S)*1.,500000.**(-torch.arange(0,128,2)/128));fc=torch.polar(torch.ones_like(t),t).cuda()
for md in["none","full","op","every2"]:
 T,P=[],[]
 for it in range(13):
  x=torch.randn(M,S,4096,device="cuda",dtype=torch.bfloat16,requires_grad=True);C.synchronize();C.reset_peak_memory_stats();b0=C.memory_allocated()
  s,e=C.Event(True),C.Event(True);s.record();run(bs,x,fc,md).float().pow(2).mean().backward();e.record();C.synchronize()
  for p in bs.parameters():p.grad=None
  if it>=3:T.append(s.elapsed_time(e));P.append((C.max_memory_allocated()-b0)/2**30)
 print(md,S,M,round(st.median(T),3),round(st.median(P),3),flush=True)
