#!/usr/bin/env python3
"""Writes rows.csv: published FSDP / ZeRO-2/3 training figures, transcribed by hand
from the sources named in each row and in SOURCES.md (the llm-foundry table lines
are pasted verbatim). Run: python3 validation/fsdp/make_rows.py"""
import csv, hashlib
import os
OUT=os.path.dirname(os.path.abspath(__file__))+'/'
cols="id,family,source,source_commit,table,gpu,gpus,model,params_b,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,local_batch,grad_accum,global_batch,dp_shard,dp_replicate,tp,pp,pp_schedule,cp,zero_stage,sharding,reshard_after_forward,activation_checkpointing,precision,float8,torch_compile,async_tp,metric,value,tokens_per_s_per_gpu,mfu_pct,peak_mem_gib,mem_kind,versions,date,notes".split(',')
rows=[]
L3={'8B':dict(params_b=8.03,layers=32,hidden=4096,ffn_hidden=14336,heads=32,kv_heads=8,vocab=128256),
    '70B':dict(params_b=70.6,layers=80,hidden=8192,ffn_hidden=28672,heads=64,kv_heads=8,vocab=128256),
    '405B':dict(params_b=405.9,layers=126,hidden=16384,ffn_hidden=53248,heads=128,kv_heads=8,vocab=128256)}
L2={'13B':dict(params_b=13.0,layers=40,hidden=5120,ffn_hidden=13824,heads=40,kv_heads=40,vocab=32000),
    '70B':dict(params_b=69.0,layers=80,hidden=8192,ffn_hidden=28672,heads=64,kv_heads=8,vocab=32000)}
TT='pytorch/torchtitan'
A100='NVIDIA A100 80GB (torchtitan perf doc: 64 A100 80GB; interconnect not stated)'
H100GT='NVIDIA H100 96GB HBM2e SXM, 500 W power limit (Meta Grand Teton: 8 GPU/host NVLink, 400 Gb/s RDMA per GPU)'
def add(**k):
    rows.append(k)
# ---------- torchtitan docs/performance.md, April 2024 (64 A100, FSDP2 1D)
tt_apr='pytorch/torchtitan docs/performance.md'
rafN='True for every transformer block except the last (torchtitan parallelize_llama.py at that commit); root module resharded'
common_a100=dict(gpu=A100,gpus=64,dp_shard=64,dp_replicate=1,tp=1,pp=1,pp_schedule='',cp=1,zero_stage=3,sharding='FSDP2 fully_shard per transformer block + root',
  reshard_after_forward=rafN,precision='bf16 params / fp32 reduce (MixedPrecisionPolicy hard-coded in torchtitan/parallelisms/parallelize_llama.py at 1ea476e9f; not restated in doc)',
  float8='none',torch_compile='off (train config compile=false; doc does not mention compile)',async_tp='no',metric='WPS (tokens/s per GPU) and MFU',grad_accum=1,
  mem_kind='not reported',peak_mem_gib='',versions='torchtitan at the doc commit; torch nightly of Apr 2024 (exact version not stated)')
def a100(id,model,family_model,seq,lb,ac,wps,mfu,commit,table,date,notes,dims):
    d=dict(common_a100); d.update(dims)
    d.update(id=id,family='fsdp1d',source=tt_apr,source_commit=commit,table=table,model=model,seq_len=seq,local_batch=lb,global_batch=lb*64,
        activation_checkpointing=ac,value=wps,tokens_per_s_per_gpu=wps,mfu_pct=mfu,date=date,notes=notes)
    add(**d)
c_l2='395a52627 (2024-04-18, first version; same numbers kept in 1ea476e9f 2024-04-24 and later until 4d88a8a44 2024-12-03 removed Llama 2)'
c_l3='1ea476e9f (2024-04-24; same numbers kept through 4d88a8a44, replaced by d4c86e375 2025-01-30)'
seqnote2='seq_len 4096 from train_configs/llama2_*.toml at that commit and the doc text ("default sequence length in Llama 2 is 4096")'
seqnote3='seq_len 8192 from train_configs/llama3_*.toml at that commit (doc does not print it)'
mfunote=' MFU per torchtitan train.py: 6N+12*L*H*Q*T flops/token (PaLM appendix B), peak 312 TFLOP/s bf16 A100.'
a100('TT24A-L2-13B-noac','Llama 2 13B','13B',4096,2,'none',2162,61.1,c_l2,'Llama 2 table row 1','2024-04-18',seqnote2+'.'+mfunote,L2['13B'])
a100('TT24A-L2-13B-sel-layer','Llama 2 13B','13B',4096,2,'selective layer (every N-th block; N NOT STATED, config default selective_ac_option=2)',1914,54.1,c_l2,'Llama 2 table row 2','2024-04-18',seqnote2+'.'+mfunote,L2['13B'])
a100('TT24A-L2-13B-sel-op','Llama 2 13B','13B',4096,2,'selective op (torchtitan op policy: save matmul/SDPA outputs, every other mm recomputed)',1904,53.8,c_l2,'Llama 2 table row 3','2024-04-18',seqnote2+'.'+mfunote,L2['13B'])
a100('TT24A-L2-70B-sel-op-b1','Llama 2 70B','70B',4096,1,'selective op',355,50.8,c_l2,'Llama 2 table row "70B | 1 | selective op"','2024-04-18',seqnote2+'. Local batch 1 because batch 2 with selective AC OOMs (doc footnote). 1D FSDP although the 70B toml sets TP 8: the doc says all rows are FSDP2 1D on 64 GPUs.'+mfunote,L2['70B'])
a100('TT24A-L2-70B-full-b2','Llama 2 70B','70B',4096,2,'full (every block)',353,50.5,c_l2,'Llama 2 table row "70B | 2 | full"','2024-04-18',seqnote2+'. Doc: MFU can reach 54% at larger local batch with full AC (no figure/config given).'+mfunote,L2['70B'])
a100('TT24A-L3-8B-sel-layer','Llama 3 8B','8B',8192,1,'selective layer (every N-th block; N NOT STATED, config default selective_ac_option=2)',2904,56.8,c_l3,'Llama 3 table row 1','2024-04-24',seqnote3+'.'+mfunote,L3['8B'])
a100('TT24A-L3-8B-sel-op','Llama 3 8B','8B',8192,1,'selective op',2973,58.2,c_l3,'Llama 3 table row 2','2024-04-24',seqnote3+'.'+mfunote,L3['8B'])
a100('TT24A-L3-70B-full','Llama 3 70B','70B',8192,1,'full (every block)',331,51.7,c_l3,'Llama 3 table row 3','2024-04-24',seqnote3+'. 1D FSDP (doc), although the 70B toml sets TP 8.'+mfunote,L3['70B'])
# ---------- torchtitan 405B Aug 2024 (128 H100, FSDP 16 x TP 8)
c405='3faaa1a0d (2024-08-23, "Fix the performance number for 405B"; supersedes 9515a140b of 2024-08-22; kept until d4c86e375 2025-01-30)'
for id,wps,mfu,opt,f8,atp,sup in [('TT24B-405B-bf16',109,29.0,'None','none','no','9515a140b printed 118 WPS / 37.1% MFU for this row; corrected next day'),
                            ('TT24B-405B-fp8',177,23.46,'Float8','tensorwise dynamic (torchao Float8Linear; only recipe at the time); fp8 all-gather + precomputed scales per llama3_405b.toml (NOT STATED in doc)','no','9515a140b printed MFU 27.77% (WPS 177 unchanged)'),
                            ('TT24B-405B-fp8-asynctp',185,24.52,'Float8 + Async TP','tensorwise dynamic; fp8 all-gather per toml (NOT STATED in doc)','yes','9515a140b printed MFU 29.03% (WPS 185 unchanged)')]:
    d=dict(L3['405B'])
    d.update(id=id,family='fsdp_tp',source=tt_apr,source_commit=c405,table='Llama 3.1 performance numbers, row "'+opt+'"',
      gpu='NVIDIA H100 94/95GB HBM2e SXM, lower TDP (doc footnote; peak between SXM and NVL, exact unknown)',gpus=128,model='Llama 3.1 405B',
      seq_len=8192,local_batch=2,grad_accum=1,global_batch=32,dp_shard=16,dp_replicate=1,tp=8,pp=1,pp_schedule='',cp=1,zero_stage=3,
      sharding='FSDP2 (dp_shard 16) x TP 8',reshard_after_forward=rafN,activation_checkpointing='full (every block)',
      precision='bf16 params / fp32 reduce (torchtitan defaults)',float8=f8,torch_compile='NOT STATED (llama3_405b.toml at the commit has compile=true)',async_tp=atp,
      metric='WPS (tokens/s per GPU) and MFU (vs H100 SXM bf16 dense peak 989 TFLOP/s, which the doc says overstates the peak of these GPUs)',
      value=wps,tokens_per_s_per_gpu=wps,mfu_pct=mfu,peak_mem_gib='',mem_kind='not reported',
      versions='torchtitan at the doc commit; torch nightly Aug 2024 (not stated)',date='2024-08-23',
      notes='seq_len 8192 and TP 8 from train_configs/llama3_405b.toml (doc: global batch = 2 x 16 FSDP ranks = 32 on 128 GPUs, hence TP 8). '+sup+'. For float8 rows the MFU counts bf16 peak; doc footnote: attention not in fp8.')
    add(**d)
# ---------- torchtitan Dec 2024 benchmark (docs/performance.md d4c86e375 == benchmarks/llama3_h100_202412_torchtitan.md)
src24='pytorch/torchtitan docs/performance.md (d4c86e375, 2025-01-30) = benchmarks/llama3_h100_202412_torchtitan.md (820504e20, 2025-06-13; identical tables)'
ver24='torch 1963fc8 (2024-12-23), torchao eab345c (2024-12-23), torchtitan 9dec370 (2024-12-26)'
memk='peak GiB, "memory readings stable"; kind NOT STATED: torchtitan 9dec370 logs max_reserved_gib on its console line (so most likely reserved); for PP the max over ranks'
f8tw='tensorwise dynamic scaling (torchao Float8Linear on nn.Linear; the only recipe at 9dec370); fp8 FSDP all-gather NOT STATED'
def h(id,family,table,model,gpus,seq,lb,gb,dps,tp,pp,sched,cp,ac,f8,comp,atp,tps,mem,notes):
    d=dict(L3[model.split()[-1]])
    d.update(id=id,family=family,source=src24,source_commit='d4c86e375 / 820504e20',table=table,gpu=H100GT,gpus=gpus,model=model,seq_len=seq,
      local_batch=lb,grad_accum=1,global_batch=gb,dp_shard=dps,dp_replicate=1,tp=tp,pp=pp,pp_schedule=sched,cp=cp,zero_stage=3,
      sharding='FSDP2 fully_shard per transformer block + root',
      reshard_after_forward=('False (PP enabled: torchtitan 9dec370 never reshards after forward with PP)' if pp>1 else rafN),
      activation_checkpointing=ac,precision='bf16 params / fp32 reduce (torchtitan defaults)' + (' + float8 linears' if f8!='none' else ''),
      float8=f8,torch_compile=comp,async_tp=atp,metric='TPS/GPU (tokens/s per GPU, read at iteration 90)',value=tps,tokens_per_s_per_gpu=tps,mfu_pct='',
      peak_mem_gib=mem,mem_kind=memk,versions=ver24,date='2024-12 (published 2025-01-30)',notes=notes)
    add(**d)
n8='seq_len 8192 from train_configs/llama3_8b.toml at 9dec370 (not printed in the table). Doc: 1D 8B without float8 reaches 33% (compile) to 39% MFU (no per-row MFU).'
h('TT24D-T1-8B-fsdp','fsdp1d','Table 1 row "FSDP"','Llama 3.1 8B',8,8192,2,16,8,1,1,'',1,'selective (op policy per llama3_8b.toml; doc says only "selective")','none','off','no',5762,82.4,n8)
h('TT24D-T1-8B-fsdp-compile','fsdp1d','Table 1 row "FSDP + torch.compile"','Llama 3.1 8B',8,8192,2,16,8,1,1,'',1,'selective (op per toml)','none','on','no',6667,77.0,n8)
h('TT24D-T1-8B-fsdp-compile-fp8','fsdp1d','Table 1 row "FSDP + torch.compile + Float8"','Llama 3.1 8B',8,8192,2,16,8,1,1,'',1,'selective (op per toml)',f8tw,'on','no',8532,76.8,n8)
for i,(dps,cp,seq,tps,mem) in enumerate([(8,1,32768,3890,83.9),(4,2,65536,2540,84.2),(2,4,131072,1071,84.0),(1,8,262144,548,84.5)]):
    h(f'TT24D-T2-8B-fsdp{dps}-cp{cp}','fsdp_cp',f'Table 2 row "FSDP {dps}, CP {cp}"','Llama 3.1 8B',8,seq,1,dps,dps,1,1,'',cp,'full (every block)',f8tw,'on','no',tps,mem,
      'Local batch 1 per FSDP rank; global batch = dp_shard sequences (DERIVED; table gives only local batch). TPS/GPU counts tokens per GPU (seq split over CP ranks).'+(' FSDP degree 1: parameters not sharded (FSDP wrapper still applied).' if dps==1 else ''))
n128='seq_len 8192 per toml (DERIVED as in Table 1). 16 hosts.'
h('TT24D-T3-8B-fsdp','fsdp1d','Table 3 row "FSDP"','Llama 3.1 8B',128,8192,2,256,128,1,1,'',1,'selective (op per toml)','none','off','no',5605,67.0,n128)
h('TT24D-T3-8B-fsdp-compile','fsdp1d','Table 3 row "FSDP + torch.compile"','Llama 3.1 8B',128,8192,2,256,128,1,1,'',1,'selective (op per toml)','none','on','no',6514,62.0,n128)
h('TT24D-T3-8B-fsdp-compile-fp8','fsdp1d','Table 3 row "FSDP + torch.compile + Float8"','Llama 3.1 8B',128,8192,2,256,128,1,1,'',1,'selective (op per toml)',f8tw,'on','no',8380,61.8,n128)
n70='seq_len 8192 per llama3_70b.toml. Local batch 16 is per FSDP rank (i.e. per TP group), global 512 = 16 x 32.'
h('TT24D-T4-70B-2d','fsdp_tp','Table 4 row "2D"','Llama 3.1 70B',256,8192,16,512,32,8,1,'',1,'full (every block)',f8tw,'on','no',829,71.9,n70)
h('TT24D-T4-70B-2d-asynctp','fsdp_tp','Table 4 row "2D + AsyncTP"','Llama 3.1 70B',256,8192,16,512,32,8,1,'',1,'full (every block)',f8tw,'on','yes',876,67.6,n70)
n405='seq_len 8192 per llama3_405b.toml. Local batch 32 per FSDP rank (8 ranks x 32 = 256 global); microbatch size / number of microbatches NOT STATED (9dec370 default pipeline_parallel_microbatches = pp degree = 8 -> microbatch 4, NOT STATED). Stages per rank for Interleaved 1F1B NOT STATED. Memory = max over ranks.'
h('TT24D-T5-405B-3d-1f1b','fsdp_tp_pp','Table 5 row "1F1B"','Llama 3.1 405B',512,8192,32,256,8,8,8,'1F1B',1,'full (every block)',f8tw,'on','yes',100,82.5,n405)
h('TT24D-T5-405B-3d-i1f1b','fsdp_tp_pp','Table 5 row "Interleaved 1F1B"','Llama 3.1 405B',512,8192,32,256,8,8,8,'Interleaved 1F1B',1,'full (every block)',f8tw,'on','yes',128,72.7,n405)
for dps,cp,seq,tps,mem in [(8,1,32768,76,75.3),(4,2,65536,47,75.9),(2,4,131072,31,77.1),(1,8,262144,16,84.9)]:
    h(f'TT24D-T6-405B-4d-fsdp{dps}-cp{cp}','fsdp_tp_pp_cp',f'Table 6 row "FSDP {dps}, CP {cp}"','Llama 3.1 405B',512,seq,8,8*dps,dps,8,8,'1F1B',cp,'full (every block)',f8tw,'on','yes',tps,mem,
      'Local batch 8 (table); global batch = 8 x dp_shard (DERIVED). Microbatching NOT STATED. Memory = max over ranks.')
# ---------- torchtitan Async TP benchmark June 2025
srcat='pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md'
verat='torch 38410cf9 (2025-06-14), torchao 6243040 (2025-06-13), torchtitan 820504e (2025-06-13)'
for model,gpus,dps,lb,ac,data in [('Llama 3.1 70B',256,32,16,'full (every block)',[('bf16',597.3,652.4),('float8 tensorwise',809.8,942.4),('float8 rowwise',599.6,624.8)]),
                                   ('Llama 3.1 8B',64,8,12,'selective op (per-op SAC)',[('bf16',4378,4809.4),('float8 tensorwise',5078.1,5570.1),('float8 rowwise',3708.5,3914.9)])]:
    m=model.split()[-1]
    for q,van,asy in data:
        for atp,v in [('no',van),('yes',asy)]:
            d=dict(L3[m]); qs={'bf16':'bf16','float8 tensorwise':'fp8tw','float8 rowwise':'fp8rw'}[q]
            d.update(id=f'TT25A-{m}-{qs}-{"asynctp" if atp=="yes" else "tp"}',family='fsdp_tp',source=srcat,source_commit='2887250bb (2025-06-16)',
              table=f'{model} table, row "{q}", column "{"Async TP" if atp=="yes" else "Vanilla TP"} tokens/sec"',gpu=H100GT,gpus=gpus,model=model,seq_len=8192,
              local_batch=lb,grad_accum=1,global_batch=lb*dps,dp_shard=dps,dp_replicate=1,tp=8,pp=1,pp_schedule='',cp=1,zero_stage=3,sharding='FSDP2 x TP 8',
              reshard_after_forward='torchtitan "default" policy (fsdp_reshard_after_forward=default at 820504e: all blocks but the last when no PP)',
              activation_checkpointing=ac,precision='bf16 params / fp32 reduce (torchtitan defaults)'+('' if q=='bf16' else ' + '+q),
              float8=('none' if q=='bf16' else q+' (torchao); fp8 all-gather NOT STATED (toml default false)'),torch_compile='on',async_tp=atp,
              metric='tokens/sec (per GPU: torchtitan logs tps per device; doc header says only "tokens/sec")',value=v,tokens_per_s_per_gpu=v,mfu_pct='',peak_mem_gib='',mem_kind='not reported',
              versions=verat,date='2025-06',notes='seq_len 8192 from the llama3 toml at 820504e (NOT printed). Global batch DERIVED = local x FSDP. The doc notes rowwise vanilla-TP baseline is anomalously low (torchtitan issue 1207).')
            add(**d)
# ---------- Trainy H200
for nn,tps,mem in [(4,10938,47.96),(8,10753,46.97)]:
    d=dict(L3['8B'])
    d.update(id=f'TT25T-8B-h200-{nn*8}',family='fsdp1d',source='pytorch/torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md',source_commit='cbccb3878 (2025-07-11)',
      table=f'Results row NUM_NODES={nn}',gpu='NVIDIA H200 (WhiteFiber; 8 GPU/host NVLink; 400 Gb/s CX-7 RDMA per GPU)',gpus=nn*8,model='Llama 3.1 8B',seq_len=8192,
      local_batch=2,grad_accum=1,global_batch=2*nn*8,dp_shard=nn*8,dp_replicate=1,tp=1,pp=1,pp_schedule='',cp=1,zero_stage=3,sharding='FSDP2 1D',
      reshard_after_forward='torchtitan default policy at e7c0cae (NOT STATED)',activation_checkpointing='selective op (llama3_8b.toml at e7c0cae)',
      precision='bf16 params / fp32 reduce (defaults) + float8',float8='tensorwise (quantize.linear.float8) with enable_fsdp_float8_all_gather, precompute_float8_dynamic_scale_for_fsdp, force_recompute_fp8_weight_in_bwd',
      torch_compile='on',async_tp='no',metric='TPS/GPU at iteration 100',value=tps,tokens_per_s_per_gpu=tps,mfu_pct='',peak_mem_gib=mem,
      mem_kind='Memory(GiB) at iteration 100; kind NOT STATED (torchtitan console logs max_reserved)',versions='torch 2.8.0a0+5228986c39 (NGC 25.05), torchao 0afa4c1, torchtitan e7c0cae (2025-06-13)',
      date='2025-06',notes='Full command line in the source. seq_len 8192 from llama3_8b.toml at e7c0cae. Third-party (Trainy) submission.')
    add(**d)
# ---------- llm-foundry
LF='mosaicml/llm-foundry scripts/train/benchmarking/README.md'
MPT={'1b':(24,2048,16),'3b':(32,2560,20),'7b':(32,4096,32),'13b':(40,5120,40),'30b':(48,7168,56),'70b':(80,8192,64)}
def lf(table,tag,gpu,line):
    c=[x.strip() for x in line.strip().strip('|').split('|')]
    model,seq,gpus,_,mfu,hfu,tfl,mb,ga,gb,sps,tps,tpsg,gbt,prec,mp,shard,ac,off,npar=c
    l,hd,nh=MPT[model]; gpus=int(gpus)
    id=f'LF-{tag}-{model}-s{seq}-g{gpus}'
    fam='zero2' if shard=='SHARD_GRAD_OP' else 'fsdp1d'
    mpdesc={'DEFAULT':'Composer FSDP mixed_precision DEFAULT (bf16 compute params, fp32 gradient reduce and buffers; Composer definition, not restated in README)',
            'PURE':'Composer FSDP mixed_precision PURE (bf16 params, bf16 reduce, bf16 buffers; Composer definition, not restated in README)'}[mp]
    add(id=id,family=fam,source=LF,source_commit='5e85bd62d (2024-01-06, "new benchmarks"; unchanged in text at 495218376 and HEAD 8c8dd48f)',table=table,gpu=gpu,gpus=gpus,
      model=f'MPT-{model}',params_b=round(int(npar)/1e9,3),layers=l,hidden=hd,ffn_hidden=4*hd,heads=nh,kv_heads=nh,vocab=50368,seq_len=int(seq),local_batch=int(mb),grad_accum=int(ga),
      global_batch=int(gb),dp_shard=gpus,dp_replicate=1,tp=1,pp=1,pp_schedule='',cp=1,zero_stage=(2 if shard=='SHARD_GRAD_OP' else 3),sharding=f'PyTorch FSDP1 {shard} (via Composer)',
      reshard_after_forward=('no (SHARD_GRAD_OP keeps params gathered between forward and backward)' if shard=='SHARD_GRAD_OP' else 'yes (FULL_SHARD)'),
      activation_checkpointing=('full (every MPT block; activation_cpu_offload '+off+')' if ac=='True' else 'none'),precision=f'{prec}; {mpdesc}',float8='none',
      torch_compile='off (not used by these yamls; NOT STATED)',async_tp='no',metric='Throughput (T/s/GPU); MFU and HFU per README formulas',value=int(tpsg),tokens_per_s_per_gpu=int(tpsg),
      mfu_pct=float(mfu),peak_mem_gib='',mem_kind='not reported',
      versions='NOT STATED per table; sweep.sh at 5e85bd62d: image mosaicml/pytorch:2.1.0_cu121-python3.10-ubuntu20.04, llm-foundry v0.0.4',date='2023-2024 (table at 5e85bd62d, 2024-01-06)',
      notes=f'README columns: MFU {mfu}, HFU {hfu}, Model TFLOP {tfl} (per GPU achieved model TFLOP/s), S/s {sps}, T/s {tps}, global batch tokens {gbt}, NumParams {npar}. Dims from scripts/train/yamls/pretrain/mpt-{model}.yaml (expansion_ratio 4, vocab 50368, attn_impl triton; benchmark script sets attn_impl via --attn_impl, default triton, norm low_precision_layernorm). limit_all_gathers true in yamls. MPT: no bias, ALiBi, MHA (kv_heads = heads).')
H100L="""|  70b | 2048 | 512 | h100_80gb | 41.25 | 55.0 | 408 | 8 | 1 | 4096 | 251 | 515636 | 1007 | 8388608 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 64862437376 |
|  70b | 2048 | 256 | h100_80gb | 42.42 | 56.56 | 419 | 8 | 1 | 2048 | 129 | 265149 | 1035 | 4194304 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 64862437376 |
|  70b | 2048 | 128 | h100_80gb | 43.36 | 57.81 | 428 | 8 | 1 | 1024 | 66 | 135490 | 1058 | 2097152 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 64862437376 |
|  30b | 2048 | 512 | h100_80gb | 40.27 | 53.69 | 398 | 8 | 1 | 4096 | 528 | 1083366 | 2115 | 8388608 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  30b | 2048 | 256 | h100_80gb | 40.89 | 54.52 | 404 | 8 | 1 | 2048 | 268 | 550022 | 2148 | 4194304 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  30b | 2048 | 128 | h100_80gb | 41.85 | 55.8 | 414 | 8 | 1 | 1024 | 137 | 281491 | 2199 | 2097152 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  13b | 2048 | 512 | h100_80gb | 41.12 | 54.83 | 406 | 16 | 1 | 8192 | 1238 | 2535811 | 4952 | 16777216 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 12853954560 |
|  13b | 2048 | 256 | h100_80gb | 41.42 | 55.23 | 409 | 16 | 1 | 4096 | 623 | 1277214 | 4989 | 8388608 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 12853954560 |
|  13b | 2048 | 128 | h100_80gb | 42.18 | 56.24 | 417 | 16 | 1 | 2048 | 317 | 650264 | 5080 | 4194304 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 12853954560 |
|  7b | 2048 | 512 | h100_80gb | 42.2 | 42.2 | 417 | 6 | 1 | 3072 | 2417 | 4951479 | 9670 | 6291456 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 6658859008 |
|  7b | 2048 | 256 | h100_80gb | 44.15 | 44.15 | 436 | 6 | 1 | 1536 | 1264 | 2590548 | 10119 | 3145728 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 6658859008 |
|  7b | 2048 | 128 | h100_80gb | 45.71 | 45.71 | 452 | 6 | 1 | 768 | 654 | 1340830 | 10475 | 1572864 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 6658859008 |
|  3b | 2048 | 512 | h100_80gb | 39.24 | 39.24 | 388 | 8 | 1 | 4096 | 5416 | 11092218 | 21664 | 8388608 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 2651837440 |
|  3b | 2048 | 256 | h100_80gb | 41.25 | 41.25 | 408 | 8 | 1 | 2048 | 2846 | 5829686 | 22772 | 4194304 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 2651837440 |
|  3b | 2048 | 128 | h100_80gb | 42.43 | 42.43 | 419 | 8 | 1 | 1024 | 1463 | 2998098 | 23422 | 2097152 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 2651837440 |
|  1b | 2048 | 512 | h100_80gb | 36.65 | 36.65 | 362 | 12 | 1 | 6144 | 9959 | 20396905 | 39837 | 12582912 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 1315950592 |
|  1b | 2048 | 256 | h100_80gb | 39.15 | 39.15 | 387 | 12 | 1 | 3072 | 5319 | 10894207 | 42555 | 6291456 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 1315950592 |
|  1b | 2048 | 128 | h100_80gb | 40.6 | 40.6 | 401 | 12 | 1 | 1536 | 2757 | 5647854 | 44123 | 3145728 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 1315950592 |"""
for ln in H100L.splitlines(): lf('H100 80GB BF16 (Large Scale, >= 128 GPUs)','H100L','NVIDIA H100 80GB (MosaicML platform; interconnect not stated)',ln)
H100S="""|  70b | 2048 | 64 | h100_80gb | 42.57 | 56.76 | 421 | 8 | 4 | 2048 | 32 | 66523 | 1039 | 4194304 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 64862437376 |
|  70b | 2048 | 32 | h100_80gb | 36.15 | 48.2 | 357 | 2 | 16 | 1024 | 13 | 28242 | 882 | 2097152 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 64862437376 |
|  30b | 2048 | 32 | h100_80gb | 43.92 | 58.57 | 434 | 14 | 3 | 1344 | 36 | 73860 | 2308 | 2752512 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  30b | 2048 | 16 | h100_80gb | 43.07 | 57.42 | 426 | 10 | 3 | 480 | 17 | 36209 | 2263 | 983040 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  30b | 2048 | 8 | h100_80gb | 38.11 | 50.82 | 377 | 3 | 21 | 504 | 7 | 16022 | 2002 | 1032192 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  13b | 2048 | 64 | h100_80gb | 39.86 | 39.86 | 394 | 2 | 1 | 128 | 150 | 307209 | 4800 | 262144 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 12853954560 |
|  13b | 2048 | 8 | h100_80gb | 39.79 | 39.79 | 393 | 2 | 1 | 16 | 18 | 38336 | 4792 | 32768 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 12853954560 |
|  7b | 8192 | 8 | h100_80gb | 37.14 | 49.52 | 367 | 8 | 2 | 128 | 6 | 55481 | 6935 | 1048576 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 6684024832 |
|  7b | 2048 | 8 | h100_80gb | 46.44 | 46.44 | 459 | 6 | 1 | 48 | 41 | 85144 | 10643 | 98304 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 6658859008 |"""
for ln in H100S.splitlines(): lf('H100 80GB BF16','H100','NVIDIA H100 80GB (MosaicML platform; interconnect not stated)',ln)
A40="""|  70b | 2048 | 128 | a100_40gb | 48.91 | 65.21 | 152 | 4 | 1 | 512 | 23 | 48194 | 376 | 1048576 | bf16 | PURE | FULL_SHARD | True | False | 64862437376 |
|  70b | 2048 | 64 | a100_40gb | 35.87 | 47.82 | 111 | 2 | 1 | 128 | 8 | 17672 | 276 | 262144 | bf16 | PURE | FULL_SHARD | True | False | 64862437376 |
|  30b | 2048 | 128 | a100_40gb | 52.25 | 69.66 | 163 | 6 | 1 | 768 | 54 | 110803 | 865 | 1572864 | bf16 | PURE | FULL_SHARD | True | False | 29975214080 |
|  30b | 2048 | 32 | a100_40gb | 51.74 | 68.98 | 161 | 4 | 1 | 128 | 13 | 27431 | 857 | 262144 | bf16 | PURE | FULL_SHARD | True | False | 29975214080 |
|  13b | 2048 | 128 | a100_40gb | 51.93 | 69.24 | 162 | 16 | 1 | 2048 | 123 | 252444 | 1972 | 4194304 | bf16 | PURE | FULL_SHARD | True | False | 12853954560 |
|  7b | 2048 | 128 | a100_40gb | 50.14 | 66.85 | 156 | 18 | 1 | 2304 | 226 | 463749 | 3623 | 4718592 | bf16 | PURE | FULL_SHARD | True | False | 6658859008 |
|  3b | 2048 | 128 | a100_40gb | 54.8 | 54.8 | 170 | 6 | 1 | 768 | 596 | 1220885 | 9538 | 1572864 | bf16 | PURE | FULL_SHARD | False | False | 2651837440 |"""
for ln in A40.splitlines(): lf('A100 40GB with 1600 Gbps node-node interconnect (RoCE)','A40','NVIDIA A100 40GB (MosaicML platform; 1600 Gb/s node-to-node RoCE)',ln)
# ---------- IBM foundation-model-stack/fms-fsdp README (FSDP1 via native PyTorch, Llama 2 architecture)
FMS='foundation-model-stack/fms-fsdp README.md'
FMSD={'7b':dict(params_b=6.74,layers=32,hidden=4096,ffn_hidden=11008,heads=32,kv_heads=32,vocab=32000),
      '13b':dict(params_b=13.0,layers=40,hidden=5120,ffn_hidden=13824,heads=40,kv_heads=40,vocab=32000),
      '34b':dict(params_b=33.7,layers=48,hidden=8192,ffn_hidden=22016,heads=64,kv_heads=8,vocab=32000),
      '70b':dict(params_b=69.0,layers=80,hidden=8192,ffn_hidden=28672,heads=64,kv_heads=8,vocab=32000)}
FMSGPU={'A100':('NVIDIA A100 80GB, 128 GPUs, 400 Gb/s (README header; 16 nodes x 8 assumed from nproc_per_node=8 in scripts/train.sh)',128),
        'H100':('NVIDIA H100 80GB (README: "H100 96 GPUs with 800 Gbps"; 12 nodes x 8)',96)}
def fms(id,ver,commit,date,table,m,gpu,shard,ac,lb,comp,tps,mfu,hfu,extra):
    g,n=FMSGPU[gpu]; d=dict(FMSD[m])
    hsdp=(shard=='HSDP')
    d.update(id=id,family=('hsdp' if hsdp else 'fsdp1d'),source=FMS,source_commit=commit,table=table,gpu=g,gpus=n,model=f'Llama 2 architecture {m} (fms LLaMAConfig, fms_fsdp/utils/config_utils.py)',
      seq_len=4096,local_batch=lb,grad_accum=1,global_batch=lb*n,dp_shard=(8 if hsdp else n),dp_replicate=(n//8 if hsdp else 1),tp=1,pp=1,pp_schedule='',cp=1,zero_stage=3,
      sharding=('PyTorch FSDP1 HYBRID_SHARD (shard within a node of 8, replicate across nodes: docs/configurations.md)' if hsdp else 'PyTorch FSDP1 FULL_SHARD'),
      reshard_after_forward='yes (FSDP1 FULL_SHARD / HYBRID_SHARD semantics)',activation_checkpointing=ac,
      precision='bf16 FSDP1 MixedPrecision bfSixteen (param, reduce and buffer dtype bf16: fms_fsdp/policies/mixed_precision.py); SDPA flash attention v2',
      float8='none',torch_compile=comp,async_tp='no',metric='training throughput tokens/sec/GPU'+('; MFU/HFU table' if mfu!='' else ''),value=tps,tokens_per_s_per_gpu=tps,mfu_pct=mfu,
      peak_mem_gib='',mem_kind='not reported',versions='PyTorch nightly + ibm-fms of the time (README recommends latest nightlies; exact versions NOT STATED)',date=date,
      notes='seq_len 4096 = train_config default seq_length at that commit (README: 4k context; NOT printed in the table). Global batch DERIVED = local x GPUs. '+(f'HFU {hfu} (PyTorch FLOP counter). ' if hfu!='' else '')+extra)
    add(**d)
selnote='"Selective AC" = checkpoint a subset of blocks (selective_checkpointing: every k-th block in Mar 2024, a fraction p of blocks from May 2024); the k or p used is NOT STATED. '
for gpu in ['A100','H100']:
    for m,shard,ac,tps,mfu,hfu in ([('7b','HSDP','none',3700,57,0.57),('13b','FSDP','selective (fraction NOT STATED)',1800,51,0.59),('34b','FSDP','full (every block)',700,47,0.64),('70b','FSDP','full (every block)',370,50,0.67)] if gpu=='A100' else
                               [('7b','HSDP','none',7500,37,0.37),('13b','FSDP','selective (fraction NOT STATED)',3800,35,0.40),('34b','FSDP','full (every block)',1550,32,0.44),('70b','FSDP','full (every block)',800,34,0.45)]):
        fms(f'FMS24M-{m}-{gpu}','Mar','4ffb9bd (2024-03-21; throughput as in cf6e42c 2024-02-27 except 7b A100 3650 -> 3700; MFU column added in 4ffb9bd)','2024-03',
            f'Training throughput table row {m}, column {gpu}; MFU/HFU table row {m.upper()}',m,gpu,shard,ac,2,'off (use_torch_compile=False in scripts/train.sh and config; table predates the compile update)',tps,mfu,hfu,
            (selnote if 'selective' in ac else '')+'MFU per nanoGPT/PaLM method (README); the README text also says "only 0.48 MFU" for 13B A100, inconsistent with its table (0.51).')
for gpu in ['A100','H100']:
    for m,shard,ac,tps,mfu,hfu in ([('7b','HSDP','none',4550,68,0.68),('13b','FSDP','selective (fraction NOT STATED)',2150,61,0.69),('34b','FSDP','selective (fraction NOT STATED)',820,55,0.74),('70b','FSDP','selective (fraction NOT STATED)',410,55,0.74)] if gpu=='A100' else
                               [('7b','HSDP','none',9600,46,0.46),('13b','FSDP','selective (fraction NOT STATED)',4850,43,0.46),('34b','FSDP','selective (fraction NOT STATED)',1830,38,0.49),('70b','FSDP','selective (fraction NOT STATED)',890,38,0.47)]):
        fms(f'FMS24C-{m}-{gpu}','May','ed74fd5 (2024-05-09, "update numbers with compile"; same numbers in 3b1ce15; current HEAD)','2024-05',
            f'Training throughput table (Compile = Y) row {m}, column {gpu}; MFU/HFU table row {m.upper()}',m,gpu,shard,ac,2,'on (table column Compile = Y)',tps,mfu,hfu,
            (selnote if 'selective' in ac else ''))
for m,shard,ac,lb,tps in [('7b','HSDP','none (AC False)',2,3760),('13b','HSDP','none (AC False)',1,1700),('34b','FSDP','on (AC True; full vs selective NOT STATED)',8,772),('70b','FSDP','on (AC True; full vs selective NOT STATED)',6,380)]:
    fms(f'FMS24F-{m}-A100','Feb','6327da6 (2024-02-21; first table ceee6f0 2024-02-20; replaced by cf6e42c 2024-02-27)','2024-02',
        f'first throughput table row {m} (128 * A100)',m,'A100',shard,ac,lb,'off (use_torch_compile default False; NOT STATED in table)',tps,'','',
        'Superseded table (the per-model scripts scripts/<model>.sh it links were never in the repository). Kept because its batch sizes / sharding differ from the later table.')
ids=[r['id'] for r in rows]; assert len(ids)==len(set(ids)), [i for i in ids if ids.count(i)>1]
with open(OUT+'rows.csv','w',newline='') as f:
    w=csv.DictWriter(f,fieldnames=cols,lineterminator='\n'); w.writeheader()
    for r in rows:
        for c in cols: r.setdefault(c,'')
        w.writerow({c:r[c] for c in cols})
print(len(rows))
from collections import Counter; print(Counter(r['family'] for r in rows))
