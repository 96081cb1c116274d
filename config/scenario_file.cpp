// Scenario loading (SPEC §3): a scenario TOML, with --set overrides and its
// [[whatif]] ladder, into the plain structs of config/scenario.h, with every
// problem collected as a positioned Diagnostic. Two phases: reading (unknown
// keys, types, enums, files; here and in model_file, hf_config,
// hardware_file) and checking (ranges and combinations, checks.cpp, shared
// with validate()).
#include "config/loader.h"

#include "hardware/calibration.h"

#include <set>

#include "config/read_context.h"
#include "schedules/schedule.h"

namespace mfusim::config {

namespace fs = std::filesystem;
using detail::Pos;
using detail::Value;
using Kind = detail::Value::Kind;
using namespace detail;

namespace {

const std::vector<std::string> kRootKeys = {"name",     "model",    "hardware", "calibration", "seed",   "cluster",
                                            "training", "parallel", "schedule", "features",    "cost",   "whatif",
                                            "moe",      "reliability"};
const std::vector<std::string> kClusterKeys = {"gpus", "board_spread"};
const std::vector<std::string> kTrainingKeys = {"seq_len", "global_batch", "micro_batch", "precision",
                                                "master_weights", "tokens_to_train"};
const std::vector<std::string> kParallelKeys = {"tp",  "pp", "cp", "ep", "vpp", "dp", "sequence_parallel",
                                                "distributed_optimizer", "first_stage_layers", "last_stage_layers",
                                                "stage_layers", "zero_stage", "shard_degree",
                                                "account_for_embedding_in_pipeline_split",
                                                "account_for_loss_in_pipeline_split"};
const std::vector<std::string> kScheduleKeys = {"name", "costs", "max_inflight"};
const std::vector<std::string> kCostsKeys = {"f", "b", "w", "comm", "fb"};
const std::vector<std::string> kFeatureKeys = {"flash_attention", "fused_kernels", "overlap_grad_reduce",
                                               "overlap_param_gather", "tp_comm_overlap", "recompute",
                                               "cuda_graphs", "python_gc", "dataloader_workers", "nccl_algo", "attention",
                                               "dataloader_ms_per_sample", "gc_pause_ms", "gc_interval_s",
                                               "overlap_p2p_comm", "reshard_after_forward", "fsdp_prefetch", "offload",
                                               "fp8_all_gather", "reduce_dtype", "fp8_attention", "fp8_params", "activation_offload_layers", "optimizer_foreach",
                                               "optimizer_post_validation", "recompute_every", "recompute_num_layers",
                                               "fsdp_version", "megatron_fsdp", "cross_entropy", "model_code", "fp8_recipe",
                                               "fp8_amax_reduction"};
const std::vector<std::string> kCostKeys = {"price_per_gpu_hour"};
const std::vector<std::string> kReliabilityKeys = {"interruptions_per_1k_gpu_days", "restart_minutes",
                                                   "checkpoint_interval_minutes", "checkpoint_save_s"};
const std::vector<std::string> kMoeKeys = {"dispatcher", "max_nodes_per_token", "comm_sms", "fp8_dispatch",
                                           "imbalance", "nvlink_gbs", "rdma_gbs", "recompute_norm_up_proj",
                                           "fp8_activation_cache", "ema", "ema_on_cpu", "fb_rearrange",
                                           "overlap_ep_comm", "shared_in_combine"};

struct Resolved {
  Scenario scenario;
  Ctx ctx;
};

// "@model"/"@hardware" are the root's internal overlay slots: a root key of the
// file, of a [[whatif]] rung or of a --set that starts with '@' is refused as
// unknown before any overlay, so user input can neither spell a slot nor slip
// past the unknown-key check.
void reject_reserved_keys(const Value& t, std::vector<Diagnostic>& diags) {
  for (const auto& [k, v] : t.items)
    if (!k.empty() && k[0] == '@')
      diags.push_back(Diagnostic{v.key_pos.file, v.key_pos.line, v.key_pos.col,
                                 "unknown key '" + k + "'" + suggest(k, kRootKeys)});
}

// Reading phase for one fully overlaid scenario tree.
void read_scenario(Ctx& ctx, Scenario& s, const Value& root, const std::string& path, const LoadOptions& opts) {
  s.source = path;
  s.name = stem_of(path);
  ctx.check_keys(root, kRootKeys, "", {"@model", "@hardware"});
  ctx.read_string(root, "name", "", s.name);
  {
    std::int64_t seed = 0;
    if (ctx.read_int(root, "seed", "", seed)) {
      if (seed < 0) ctx.error(root.find("seed")->pos, "'seed' must be >= 0 (seed=" + std::to_string(seed) + ")");
      else s.seed = static_cast<std::uint64_t>(seed);
    }
  }

  // model / hardware: a name (data file) or an inline table; "@model"/"@hardware" hold --set overlays of a named one.
  auto resolve_ref = [&](const char* key, const char* sub, auto&& from_tree, auto&& list) -> bool {
    const Value* v = ctx.get(root, key, "");
    if (!v) {
      ctx.error(root.pos, std::string("missing required key '") + key + "' (a name from " + sub +
                              "/ or an inline [" + key + "] table)");
      return false;
    }
    if (v->is_table()) {
      Value t = *v;
      from_tree("", t, std::string("(inline)"));
      return true;
    }
    if (v->kind != Kind::string) {
      ctx.type_error(*v, key, "a name (string) or a table");
      return false;
    }
    const std::string file = v->str.empty() ? "" : find_data_file(sub, v->str, path, opts);
    if (file.empty()) {
      ctx.error(v->pos, std::string("unknown ") + key + " " + quote(v->str) + suggest_name(v->str, list()) +
                            ": no " + sub + "/" + v->str + ".toml found next to the scenario, in its parent "
                            "directories or in the data directory");
      return false;
    }
    Value tree;
    if (!load_tree(ctx, file, tree, v->pos)) return false;
    if (const Value* overlay = root.find(std::string("@") + key)) detail::merge(tree, *overlay);
    from_tree(file, tree, v->str);
    return true;
  };
  resolve_ref(
      "model", "models",
      [&](const std::string& file, const Value& t, const std::string& ref) {
        s.model = file.empty() ? read_model_table(ctx, t, "(inline)") : model_from_tree(ctx, file, t);
        s.model_ref = ref;
      },
      [&] { return list_names("models", opts, path); });
  resolve_ref(
      "hardware", "hardware",
      [&](const std::string& file, const Value& t, const std::string& ref) {
        s.hardware = read_hardware_table(ctx, t, file.empty() ? "(inline)" : stem_of(file));
        s.hardware_ref = ref;
        s.hardware_as_shipped = !file.empty() && root.find("@hardware") == nullptr && !shipped_name(file).empty();
      },
      [&] { return list_names("hardware", opts, path); });

  std::string calib;
  const bool named = ctx.read_string(root, "calibration", "", calib);
  if (named && calib == "none") {
    s.calibration_choice = "none";   // the datasheet roofline, by request
  } else if (!named && !root.find("calibration")) {
    // No calibration line: the shipped measured file of the GPU's architecture, if any.
    const std::string def = hardware::default_calibration_file(s.hardware);
    std::error_code ec;
    for (const auto& r : def.empty() ? std::vector<fs::path>{} : data_roots(path, opts))
      if (fs::is_regular_file(r / def, ec)) {
        try {
          s.calibration = hardware::read_calibration((r / def).lexically_normal().string());
          s.calibration->source = def;
          s.calibration_path = def;
          s.calibration_choice = "default";
          s.calibration_shipped = shipped_name((r / def).string());
        } catch (const std::exception& e) {
          ctx.error(root.pos, std::string("cannot use the default calibration: ") + e.what());
        }
        break;
      }
  } else if (named) {
    s.calibration_choice = "file";
    const Value* v = root.find("calibration");
    std::error_code ec;
    fs::path p(calib);
    std::string found;
    if (p.is_absolute()) {
      if (fs::is_regular_file(p, ec)) found = p.string();
    } else if (!calib.empty()) {
      for (const auto& r : data_roots(path, opts))
        if (fs::is_regular_file(r / p, ec)) {
          found = (r / p).lexically_normal().string();
          break;
        }
    }
    if (found.empty()) ctx.error(v->pos, "calibration file " + quote(calib) + " not found");
    s.calibration_path = found;
    s.calibration_shipped = shipped_name(found);
    std::string text;
    if (!found.empty() && read_file(found, text)) {
      try {   // toml++ recurses per nesting level: a too-deep file stops here, with its position
        detail::check_toml_nesting(text, found);
      } catch (const detail::ParseFailure& f) {
        ctx.error(f.pos, f.message);
        found.clear();
      }
    }
    if (!found.empty()) {
      try {
        s.calibration = hardware::read_calibration(found);
      } catch (const std::exception& e) {
        ctx.error(v->pos, std::string("cannot use calibration file: ") + e.what());
      }
    }
  }

  if (const Value* c = ctx.read_table(root, "cluster", "")) {
    ctx.check_keys(*c, kClusterKeys, "cluster.");
    if (!ctx.read_int(*c, "gpus", "cluster.", s.gpus) && !c->find("gpus")) ctx.missing(*c, "cluster.gpus");
    if (double sd = 0; ctx.read_number(*c, "board_spread", "cluster.", sd)) {
      if (sd >= 0 && sd <= 0.2)
        s.board_spread = sd;
      else
        ctx.error(c->find("board_spread")->pos,
                  "'cluster.board_spread' must be in [0, 0.2] (a fraction of the boards' mean speed), got " + fmt(sd));
    }
  } else if (!root.find("cluster")) {
    ctx.error(root.pos, "missing required key 'cluster.gpus'");
  }

  if (const Value* t = ctx.read_table(root, "training", "")) {
    const std::string p = "training.";
    ctx.check_keys(*t, kTrainingKeys, p);
    ctx.read_int(*t, "seq_len", p, s.training.seq_len);
    if (!ctx.read_int(*t, "global_batch", p, s.training.global_batch) && !t->find("global_batch"))
      ctx.missing(*t, "training.global_batch");
    ctx.read_int(*t, "micro_batch", p, s.training.micro_batch);
    int prec = ctx.read_enum(*t, "precision", p, {"bf16", "fp8"});
    if (prec == 1) s.training.precision = Precision::fp8;
    int mw = ctx.read_enum(*t, "master_weights", p, {"bf16-params", "fp32-autocast"});
    if (mw == 1) s.training.master_weights = MasterWeights::fp32_autocast;
    ctx.read_number(*t, "tokens_to_train", p, s.training.tokens_to_train);
  } else if (!root.find("training")) {
    ctx.error(root.pos, "missing required key 'training.global_batch'");
  }

  if (const Value* t = ctx.read_table(root, "parallel", "")) {
    const std::string p = "parallel.";
    auto& par = s.parallel;
    ctx.check_keys(*t, kParallelKeys, p);
    ctx.read_int(*t, "tp", p, par.tp);
    ctx.read_int(*t, "pp", p, par.pp);
    ctx.read_int(*t, "cp", p, par.cp);
    ctx.read_int(*t, "ep", p, par.ep);
    ctx.read_int(*t, "vpp", p, par.vpp);
    ctx.read_int(*t, "dp", p, par.dp);
    ctx.read_bool(*t, "sequence_parallel", p, par.sequence_parallel);
    const bool dopt_given = ctx.read_bool(*t, "distributed_optimizer", p, par.distributed_optimizer);
    // zero_stage: 1 is distributed_optimizer = true, 0 is false; 2 and 3 shard the optimizer too.
    if (ctx.read_int(*t, "zero_stage", p, par.zero_stage)) {
      const bool sharded = par.zero_stage >= 1;
      if (dopt_given && sharded != par.distributed_optimizer)
        ctx.error(t->find("zero_stage")->pos, "'parallel.zero_stage' = " + std::to_string(par.zero_stage) +
                                                  " contradicts 'parallel.distributed_optimizer' = " +
                                                  (par.distributed_optimizer ? "true" : "false") +
                                                  " (zero_stage >= 1 shards the optimizer state)");
      else if (par.zero_stage >= 0 && par.zero_stage <= 3)
        par.distributed_optimizer = sharded;
    } else {
      par.zero_stage = par.distributed_optimizer ? 1 : 0;
    }
    ctx.read_int(*t, "shard_degree", p, par.shard_degree);
    ctx.read_int(*t, "first_stage_layers", p, par.first_stage_layers);
    ctx.read_int(*t, "last_stage_layers", p, par.last_stage_layers);
    ctx.read_bool(*t, "account_for_embedding_in_pipeline_split", p, par.account_for_embedding_in_pipeline_split);
    ctx.read_bool(*t, "account_for_loss_in_pipeline_split", p, par.account_for_loss_in_pipeline_split);
    if (const Value* a = ctx.get(*t, "stage_layers", p)) {
      if (a->kind != Kind::array) {
        ctx.type_error(*a, "parallel.stage_layers", "an array of integers");
      } else {
        for (const auto& [k, e] : a->items) {
          if (e.kind != Kind::integer || e.i < INT_MIN || e.i > INT_MAX) {
            ctx.type_error(e, "parallel.stage_layers[]", "an integer");
            break;
          }
          par.stage_layers.push_back(static_cast<int>(e.i));
        }
      }
    }
  }

  if (const Value* t = ctx.read_table(root, "schedule", "")) {
    const std::string p = "schedule.";
    ctx.check_keys(*t, kScheduleKeys, p);
    int k = ctx.read_enum(*t, "name", p, schedules::schedule_names());
    if (k >= 0) {
      if (auto kind = schedule_from_string(schedules::schedule_names()[static_cast<std::size_t>(k)]))
        s.schedule.name = *kind;
    }
    ctx.read_int(*t, "max_inflight", p, s.schedule.max_inflight);
    if (const Value* c = ctx.read_table(*t, "costs", p)) {
      const std::string q = "schedule.costs.";
      ctx.check_keys(*c, kCostsKeys, q);
      ScheduleCosts sc;
      double x = 0;
      if (ctx.read_number(*c, "f", q, x)) sc.f = x * 1e-3;
      else if (!c->find("f")) ctx.missing(*c, "schedule.costs.f");
      if (ctx.read_number(*c, "b", q, x)) sc.b = x * 1e-3;
      else if (!c->find("b")) ctx.missing(*c, "schedule.costs.b");
      if (ctx.read_number(*c, "w", q, x)) sc.w = x * 1e-3;
      if (ctx.read_number(*c, "comm", q, x)) sc.comm = x * 1e-3;
      if (ctx.read_number(*c, "fb", q, x)) sc.fb = x * 1e-3;
      s.schedule.costs = sc;
    }
  }  // Interleaving needs chunks: without an explicit parallel.vpp, interleaved-1f1b
  // uses 2 model chunks per rank (documented in SPEC-extensions, docs/schedules.md).
  if (s.schedule.name == ScheduleKind::interleaved_1f1b) {
    const Value* par = root.find("parallel");
    if (!par || !par->find("vpp")) s.parallel.vpp = 2;
  }


  if (const Value* t = ctx.read_table(root, "features", "")) {
    const std::string p = "features.";
    auto& f = s.features;
    ctx.check_keys(*t, kFeatureKeys, p);
    ctx.read_bool(*t, "flash_attention", p, f.flash_attention);
    ctx.read_bool(*t, "fused_kernels", p, f.fused_kernels);
    ctx.read_bool(*t, "overlap_grad_reduce", p, f.overlap_grad_reduce);
    ctx.read_bool(*t, "overlap_param_gather", p, f.overlap_param_gather);
    ctx.read_bool(*t, "tp_comm_overlap", p, f.tp_comm_overlap);
    ctx.read_bool(*t, "overlap_p2p_comm", p, f.overlap_p2p_comm);
    ctx.read_bool(*t, "optimizer_post_validation", p, f.optimizer_post_validation);
    int r = ctx.read_enum(*t, "recompute", p, {"none", "selective", "full", "selective-op"});
    if (r >= 0) f.recompute = static_cast<Recompute>(r);
    ctx.read_bool(*t, "cuda_graphs", p, f.cuda_graphs);
    ctx.read_bool(*t, "python_gc", p, f.python_gc);
    ctx.read_int(*t, "dataloader_workers", p, f.dataloader_workers);
    int n = ctx.read_enum(*t, "nccl_algo", p, {"auto", "ring", "tree"});
    if (n >= 0) f.nccl_algo = static_cast<NcclAlgo>(n);
    ctx.read_number(*t, "dataloader_ms_per_sample", p, f.dataloader_ms_per_sample);
    ctx.read_number(*t, "gc_pause_ms", p, f.gc_pause_ms);
    ctx.read_number(*t, "gc_interval_s", p, f.gc_interval_s);
    ctx.read_bool(*t, "reshard_after_forward", p, f.reshard_after_forward);
    ctx.read_int(*t, "fsdp_prefetch", p, f.fsdp_prefetch);
    ctx.read_int(*t, "recompute_every", p, f.recompute_every);
    ctx.read_int(*t, "recompute_num_layers", p, f.recompute_num_layers);
    ctx.read_int(*t, "fsdp_version", p, f.fsdp_version);
    ctx.read_bool(*t, "megatron_fsdp", p, f.megatron_fsdp);
    int ce = ctx.read_enum(*t, "cross_entropy", p, {"fused", "fp32", "compiled"});
    if (ce >= 0) f.cross_entropy = static_cast<CrossEntropy>(ce);
    int mc = ctx.read_enum(*t, "model_code", p, {"megatron", "torchtitan"});
    if (mc >= 0) f.model_code = static_cast<ModelCode>(mc);
    int o = ctx.read_enum(*t, "offload", p, {"none", "optimizer", "params"});
    if (o >= 0) f.offload = static_cast<Offload>(o);
    ctx.read_bool(*t, "fp8_all_gather", p, f.fp8_all_gather);
    int rd = ctx.read_enum(*t, "reduce_dtype", p, {"fp32", "bf16"});
    if (rd >= 0) f.reduce_fp32 = rd == 0;
    ctx.read_bool(*t, "fp8_attention", p, f.fp8_attention);
    ctx.read_bool(*t, "fp8_params", p, f.fp8_params);
    ctx.read_bool(*t, "optimizer_foreach", p, f.optimizer_foreach);
    ctx.read_int(*t, "activation_offload_layers", p, f.activation_offload_layers);
    int fr = ctx.read_enum(*t, "fp8_recipe", p, {"tensorwise", "current", "mxfp8", "blockwise"});
    if (fr >= 0) f.fp8_recipe = static_cast<Fp8Recipe>(fr);
    int ar = ctx.read_enum(*t, "fp8_amax_reduction", p, {"tp_dp_cp", "tp_cp", "tp", "none"});
    if (ar >= 0) f.fp8_amax_reduction = static_cast<Fp8AmaxReduction>(ar);
    // features.attention decides flash_attention; both in one table must agree (an
    // overlay that sets one of them drops the other: config/overrides.cpp).
    const int a = ctx.read_enum(*t, "attention", p, attention_names());
    if (a >= 0) {
      const auto att = static_cast<Attention>(a);
      const bool fused = fused_attention(att);
      if (const Value* fa = t->find("flash_attention"); fa && f.flash_attention != fused)
        ctx.error(fa->pos, "features.flash_attention = " + std::string(f.flash_attention ? "true" : "false") +
                           " contradicts features.attention = \"" + to_string(att) + "\" (" +
                           (fused ? "a fused" : "a materialised") + " attention); give one of them");
      f.attention = att;
      f.flash_attention = fused;
    }
  }

  if (const Value* t = ctx.read_table(root, "cost", "")) {
    ctx.check_keys(*t, kCostKeys, "cost.");
    ctx.read_number(*t, "price_per_gpu_hour", "cost.", s.cost.price_per_gpu_hour);
  }
  if (const Value* t = ctx.read_table(root, "reliability", "")) {
    const std::string p = "reliability.";
    auto& rl = s.reliability;
    ctx.check_keys(*t, kReliabilityKeys, p);
    ctx.read_number(*t, "interruptions_per_1k_gpu_days", p, rl.interruptions_per_1k_gpu_days);
    ctx.read_number(*t, "restart_minutes", p, rl.restart_minutes);
    ctx.read_number(*t, "checkpoint_interval_minutes", p, rl.checkpoint_interval_minutes);
    double save = 0;
    if (ctx.read_number(*t, "checkpoint_save_s", p, save)) rl.checkpoint_save_s = save;
  }
  // No price (or 0): the hardware profile's published list price, where it has one.
  if (s.cost.price_per_gpu_hour == 0 && s.hardware.price_per_gpu_hour > 0) {
    s.cost.price_per_gpu_hour = s.hardware.price_per_gpu_hour;
    s.cost.price_from_hardware = true;
  }

  if (const Value* t = ctx.read_table(root, "moe", "")) {
    const std::string p = "moe.";
    auto& mo = s.moe;
    ctx.check_keys(*t, kMoeKeys, p);
    int d = ctx.read_enum(*t, "dispatcher", p, {"alltoall", "deepep"});
    if (d >= 0) mo.dispatcher = static_cast<MoeDispatcher>(d);
    ctx.read_int(*t, "max_nodes_per_token", p, mo.max_nodes_per_token);
    ctx.read_int(*t, "comm_sms", p, mo.comm_sms);
    ctx.read_bool(*t, "fp8_dispatch", p, mo.fp8_dispatch);
    ctx.read_number(*t, "imbalance", p, mo.imbalance);
    ctx.read_number(*t, "nvlink_gbs", p, mo.nvlink_gbs);
    ctx.read_number(*t, "rdma_gbs", p, mo.rdma_gbs);
    ctx.read_bool(*t, "recompute_norm_up_proj", p, mo.recompute_norm_up_proj);
    ctx.read_bool(*t, "fp8_activation_cache", p, mo.fp8_activation_cache);
    ctx.read_bool(*t, "ema", p, mo.ema);
    ctx.read_bool(*t, "ema_on_cpu", p, mo.ema_on_cpu);
    ctx.read_bool(*t, "fb_rearrange", p, mo.fb_rearrange);
    ctx.read_bool(*t, "overlap_ep_comm", p, mo.overlap_ep_comm);
    ctx.read_bool(*t, "shared_in_combine", p, mo.shared_in_combine);
  }

  // dp: derived unless given (the check phase compares a given one).
  const std::int64_t mp = mul(mul(s.parallel.tp, s.parallel.pp), s.parallel.cp);
  if (s.parallel.dp == 0 && mp > 0 && s.gpus > 0 && s.gpus % mp == 0) s.parallel.dp = static_cast<int>(s.gpus / mp);
}

Scenario resolve_tree(const Value& root, const std::string& path, const LoadOptions& opts,
                      std::vector<Diagnostic>& diags) {
  Ctx ctx;
  Scenario s;
  read_scenario(ctx, s, root, path, opts);
  if (ctx.diags.empty())
    check_scenario(s, [&](const std::string& key, const std::string& msg) { ctx.error(locate(ctx, key, path), msg); });
  diags = std::move(ctx.diags);
  return s;
}

LoadedScenario load_from_text(const std::string& text, const std::string& path, const LoadOptions& opts) {
  Value root;
  try {
    root = detail::parse_toml(text, path);
  } catch (const detail::ParseFailure& f) {
    throw ConfigError({Diagnostic{f.pos.file, f.pos.line, f.pos.col, f.message}});
  }

  std::vector<Diagnostic> diags;
  reject_reserved_keys(root, diags);
  if (const Value* w = root.find("whatif"); w && w->kind == Kind::array)
    for (const auto& [k, e] : w->items)
      if (e.is_table()) reject_reserved_keys(e, diags);
  for (const auto& spec : opts.overrides) {
    Value ov;
    if (!parse_override(spec, ov, diags)) continue;
    const std::size_t before = diags.size();
    reject_reserved_keys(ov, diags);
    if (diags.size() == before && override_fits(root, ov, spec, diags)) overlay_root(root, ov);
  }
  if (!diags.empty()) throw ConfigError(diags);

  Value whatifs;
  if (const Value* w = root.find("whatif")) {
    whatifs = *w;
    root.erase("whatif");
  }

  LoadedScenario out;
  out.base = resolve_tree(root, path, opts, diags);
  std::set<std::string> seen;
  for (const auto& d : diags) seen.insert(d.str());

  if (whatifs.kind != Kind::null) {
    if (whatifs.kind != Kind::array) {
      diags.push_back(Diagnostic{whatifs.pos.file, whatifs.pos.line, whatifs.pos.col,
                                 "'whatif' must be an array of tables ([[whatif]]), got " + describe_value(whatifs)});
    } else {
      Value rung = root;
      int index = 0;
      for (const auto& [k, e] : whatifs.items) {
        ++index;
        if (!e.is_table()) {
          diags.push_back(Diagnostic{e.pos.file, e.pos.line, e.pos.col,
                                     "each [[whatif]] entry must be a table, got " + describe_value(e)});
          continue;
        }
        WhatIf w;
        w.name = "whatif " + std::to_string(index);
        Value overlay = e;
        if (const Value* n = e.find("name")) {
          if (n->kind == Kind::string) w.name = n->str;
          else
            diags.push_back(Diagnostic{n->pos.file, n->pos.line, n->pos.col,
                                       "'whatif.name' must be a string, got " + describe_value(*n)});
          overlay.erase("name");
        }
        if (const Value* nested = e.find("whatif")) {
          diags.push_back(Diagnostic{nested->key_pos.file, nested->key_pos.line, nested->key_pos.col,
                                     "a [[whatif]] entry cannot contain another 'whatif'"});
          overlay.erase("whatif");
        }
        overlay_root(rung, overlay);
        std::vector<Diagnostic> rung_diags;
        w.scenario = resolve_tree(rung, path, opts, rung_diags);
        for (auto& d : rung_diags) {
          if (seen.count(d.str())) continue;
          if (opts.whatif_errors_as_rows) {   // the rung's row says why
            w.error += (w.error.empty() ? "" : "; ") + d.message;
            continue;
          }
          seen.insert(d.str());
          d.message = "in whatif " + quote(w.name) + ": " + d.message;
          diags.push_back(std::move(d));
        }
        out.whatifs.push_back(std::move(w));
      }
    }
  }
  if (!diags.empty()) throw ConfigError(sorted(std::move(diags)));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- public API

LoadedScenario load_scenario_string(const std::string& text, const std::string& path, const LoadOptions& opts) {
  return load_from_text(text, path, opts);
}

LoadedScenario load_scenario(const std::string& path, const LoadOptions& opts) {
  std::string text;
  if (!read_file(path, text)) throw ConfigError({Diagnostic{path, 0, 0, "cannot read scenario file"}});
  return load_from_text(text, path, opts);
}

}  // namespace mfusim::config
